package defs

// RTSPAuth shows the refused credentials of the RTSP servers that check them (output.rtsp).
type RTSPAuth interface {
	// RTSPAuthFailures returns refused requests by reason ("missing": no credentials,
	// "wrong": Basic/Digest credentials of no user, "method": an unoffered scheme); false
	// without an RTSP server that checks credentials.
	RTSPAuthFailures() (map[string]uint64, bool)
}
