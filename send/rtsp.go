package send

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/bluenviron/gortsplib/v5"
	"github.com/bluenviron/gortsplib/v5/pkg/base"
	"github.com/bluenviron/gortsplib/v5/pkg/description"
	"github.com/bluenviron/gortsplib/v5/pkg/format"

	"github.com/vinfer/vinfer/media"
)

// Publishing retries: the first after minRetry, doubling up to maxRetry.
const (
	minRetry = 500 * time.Millisecond
	maxRetry = 5 * time.Second
)

// rtspPublisher publishes to an RTSP server (ANNOUNCE, SETUP, RECORD; RFC 2326 §10.3, §10.11)
// at rtsp://[user:pass@]host[:port]/path[?transport=tcp|udp] (default tcp). A server that is
// down or drops the session is retried with backoff, each time from the next key frame; the
// file keeps its pace meanwhile.
type rtspPublisher struct {
	ctx      context.Context
	url      string
	redacted string
	protocol gortsplib.Protocol
	p        *packetizer
	desc     *description.Session
	medi     *description.Media
	log      *slog.Logger
	c        *gortsplib.Client
	ended    chan error // the client's end, from its Wait
	retryAt  time.Time
	backoff  time.Duration
}

func newRTSPPublisher(ctx context.Context, u *url.URL, c media.Codec, log *slog.Logger) (*rtspPublisher, error) {
	t := &rtspPublisher{ctx: ctx, log: log, redacted: u.Redacted(), protocol: gortsplib.ProtocolTCP}
	switch tr := u.Query().Get("transport"); tr {
	case "", "tcp":
	case "udp":
		t.protocol = gortsplib.ProtocolUDP
	default:
		return nil, fmt.Errorf("rtsp: transport=%q: use tcp or udp", tr)
	}
	q := u.Query()
	q.Del("transport")
	v := *u
	v.RawQuery = q.Encode()
	t.url = v.String()
	var err error
	if t.p, err = newPacketizer(c, 96, nil); err != nil {
		return nil, err
	}
	t.medi = &description.Media{Type: description.MediaTypeVideo, Formats: []format.Format{t.p.forma}}
	t.desc = &description.Session{Medias: []*description.Media{t.medi}}
	return t, nil
}

func (t *rtspPublisher) connect() {
	c := &gortsplib.Client{Protocol: &t.protocol}
	if err := c.StartRecording(t.url, t.desc); err != nil {
		t.failed(err)
		return
	}
	t.c, t.ended = c, make(chan error, 1)
	go func(ended chan<- error) { ended <- c.Wait() }(t.ended)
	t.log.Info("publishing", "to", t.redacted)
	t.backoff = 0
}

func (t *rtspPublisher) failed(err error) {
	if t.c != nil {
		t.c.Close()
		t.c = nil
	}
	t.backoff = min(max(2*t.backoff, minRetry), maxRetry)
	t.retryAt = time.Now().Add(t.backoff)
	t.log.Warn("publishing failed; retrying", "to", t.redacted, "err", err, "in", t.backoff)
}

func (t *rtspPublisher) write(au *media.AccessUnit) error {
	if t.c != nil {
		select {
		case err := <-t.ended:
			t.failed(err)
		default:
		}
	}
	if t.c == nil {
		if !au.Key || time.Now().Before(t.retryAt) || t.ctx.Err() != nil {
			return nil
		}
		if t.connect(); t.c == nil {
			return nil
		}
	}
	pkts, err := t.p.Packets(au)
	if err != nil {
		return err
	}
	for _, k := range pkts {
		if err := t.c.WritePacketRTPWithNTP(t.medi, k, time.Now()); err != nil {
			t.failed(err)
			return nil
		}
	}
	return nil
}

func (t *rtspPublisher) close() error {
	if t.c != nil {
		t.c.Close()
		t.c = nil
	}
	return nil
}

// rtspServer serves the file itself at rtsp://host:port/path[?rtp_port=N]: DESCRIBE, SETUP
// and PLAY for that path (any path when it is empty), over TCP, and over UDP when rtp_port
// gives the RTP port (RTCP on the next). Clients joining get the live stream from where it is.
type rtspServer struct {
	path string
	srv  *gortsplib.Server
	st   *gortsplib.ServerStream
	medi *description.Media
	p    *packetizer
	log  *slog.Logger
}

func newRTSPServer(u *url.URL, c media.Codec, log *slog.Logger) (*rtspServer, error) {
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "8554")
	}
	t := &rtspServer{path: strings.Trim(u.Path, "/"), log: log}
	var err error
	if t.p, err = newPacketizer(c, 96, nil); err != nil {
		return nil, err
	}
	t.srv = &gortsplib.Server{Handler: t, RTSPAddress: host}
	if u.Query().Has("rtp_port") {
		port, err := query(u, "rtp_port", 0, 16)
		if err != nil || port == 0 || port%2 != 0 || port == 65534 {
			return nil, fmt.Errorf("rtsp: rtp_port=%s: an even port below 65534 (RTCP on the next)", u.Query().Get("rtp_port"))
		}
		t.srv.UDPRTPAddress = net.JoinHostPort(u.Hostname(), fmt.Sprint(port))
		t.srv.UDPRTCPAddress = net.JoinHostPort(u.Hostname(), fmt.Sprint(port+1))
	}
	if err := t.srv.Start(); err != nil {
		return nil, fmt.Errorf("rtsp server: %w", err)
	}
	t.medi = &description.Media{Type: description.MediaTypeVideo, Formats: []format.Format{t.p.forma}}
	t.st = &gortsplib.ServerStream{Server: t.srv, Desc: &description.Session{Medias: []*description.Media{t.medi}}}
	if err := t.st.Initialize(); err != nil {
		t.srv.Close()
		return nil, err
	}
	log.Info("serving", "url", fmt.Sprintf("rtsp://%s/%s", host, t.path))
	return t, nil
}

func (t *rtspServer) stream(path string) (*base.Response, *gortsplib.ServerStream, error) {
	if t.path != "" && strings.Trim(path, "/") != t.path {
		return &base.Response{StatusCode: base.StatusNotFound}, nil, fmt.Errorf("no stream at %q", path)
	}
	return &base.Response{StatusCode: base.StatusOK}, t.st, nil
}

// OnDescribe implements gortsplib.ServerHandlerOnDescribe.
func (t *rtspServer) OnDescribe(ctx *gortsplib.ServerHandlerOnDescribeCtx) (*base.Response, *gortsplib.ServerStream, error) {
	return t.stream(ctx.Path)
}

// OnSetup implements gortsplib.ServerHandlerOnSetup.
func (t *rtspServer) OnSetup(ctx *gortsplib.ServerHandlerOnSetupCtx) (*base.Response, *gortsplib.ServerStream, error) {
	return t.stream(ctx.Path)
}

// OnPlay implements gortsplib.ServerHandlerOnPlay.
func (t *rtspServer) OnPlay(*gortsplib.ServerHandlerOnPlayCtx) (*base.Response, error) {
	return &base.Response{StatusCode: base.StatusOK}, nil
}

func (t *rtspServer) write(au *media.AccessUnit) error {
	pkts, err := t.p.Packets(au)
	if err != nil {
		return err
	}
	now := time.Now()
	for _, k := range pkts {
		if err := t.st.WritePacketRTPWithNTP(t.medi, k, now); err != nil {
			return fmt.Errorf("rtsp server: %w", err)
		}
	}
	return nil
}

func (t *rtspServer) close() error {
	t.st.Close()
	t.srv.Close()
	return nil
}
