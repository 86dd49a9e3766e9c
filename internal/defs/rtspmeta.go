package defs

// RTSPMeta shows the RTSP server of output.rtsp (package onvifmeta): streams' video with ONVIF
// metadata.
type RTSPMeta interface {
	// RTSPMeta returns the server's state; false without output.rtsp.
	RTSPMeta() (RTSPMetaInfo, bool)
}

// RTSPMetaInfo is the server's state.
type RTSPMetaInfo struct {
	// Clients are the RTSP sessions open now.
	Clients int `json:"clients"`
	// Dropped: clients dropped for not reading; Refused: SETUPs refused beyond max_clients and
	// connections closed on accept beyond 2×max_clients+8 open at once;
	// Documents: metadata documents sent.
	Dropped   uint64 `json:"dropped"`
	Refused   uint64 `json:"refused"`
	Documents uint64 `json:"documents"`
}
