package liveview

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/webrtc/v4"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/media"
)

// Timeouts of a session.
const (
	// gatherTimeout bounds gathering the answer's ICE candidates.
	gatherTimeout = 5 * time.Second
	// connectTimeout bounds the time from the answer to a connected peer.
	connectTimeout = 30 * time.Second
	// maxOffer bounds an SDP offer (a browser's is a few kB).
	maxOffer = 64 << 10
	// maxCandidates bounds the ICE candidates an offer lists (a browser's has a few per
	// network interface): the agent checks every one with STUN for up to connectTimeout, so an
	// offer of a thousand candidates made the server send a thousand datagrams a second to
	// addresses the client chose.
	maxCandidates = 32
	// resultsBuffered bounds the bytes waiting on a session's data channel; results past it
	// are dropped for that viewer (counted).
	resultsBuffered = 1 << 20
)

// Server answers viewers' WebRTC offers (defs.Live): each session sends one stream's access
// units as RTP (H.264 RFC 6184, H.265 RFC 7798; RTP timestamp = PTS at 90 kHz) and, on the data
// channel "results" the viewer opens, the stream's results as JSON text (sink.AppendJSON, with
// "pts" in seconds). The zero value is not usable: use NewServer.
type Server struct {
	hub     *Hub
	results defs.Results
	log     *slog.Logger
	api     *webrtc.API
	servers []webrtc.ICEServer

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	sessions map[string]*session

	started, resultsDropped atomic.Int64
}

// NewServer returns a server of hub's feeds sending results from results (nil: none), with
// the ICE settings of c. Errors: ICE settings pion refuses.
func NewServer(hub *Hub, results defs.Results, c config.ICE, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	me := &webrtc.MediaEngine{}
	if err := me.RegisterDefaultCodecs(); err != nil {
		return nil, fmt.Errorf("liveview: codecs: %w", err)
	}
	reg := &interceptor.Registry{}
	if err := webrtc.RegisterDefaultInterceptors(me, reg); err != nil {
		return nil, fmt.Errorf("liveview: interceptors: %w", err)
	}
	var se webrtc.SettingEngine
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeQueryOnly) // resolve a browser's .local names, announce none
	se.SetIncludeLoopbackCandidate(c.Loopback)
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4, webrtc.NetworkTypeUDP6})
	if c.PortMin != 0 {
		if err := se.SetEphemeralUDPPortRange(c.PortMin, c.PortMax); err != nil {
			return nil, fmt.Errorf("liveview: ice ports: %w", err)
		}
	}
	if len(c.PublicIPs) > 0 {
		if err := se.SetICEAddressRewriteRules(webrtc.ICEAddressRewriteRule{
			External: c.PublicIPs, AsCandidateType: webrtc.ICECandidateTypeHost,
			Mode: webrtc.ICEAddressRewriteReplace}); err != nil {
			return nil, fmt.Errorf("liveview: ice public_ips: %w", err)
		}
	}
	s := &Server{hub: hub, results: results, log: log, sessions: map[string]*session{},
		api: webrtc.NewAPI(webrtc.WithMediaEngine(me), webrtc.WithSettingEngine(se), webrtc.WithInterceptorRegistry(reg))}
	for _, v := range c.Servers {
		s.servers = append(s.servers, webrtc.ICEServer{URLs: v.URLs, Username: v.Username, Credential: v.Credential})
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Close ends every session and waits for them.
func (s *Server) Close() {
	s.cancel()
	s.mu.Lock()
	for _, ss := range s.sessions {
		ss.end(errors.New("server closing"))
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Stats returns the viewers and counters.
func (s *Server) Stats() defs.LiveStats {
	st := s.hub.Stats()
	st.Sessions = s.started.Load()
	return st
}

// ResultsDropped counts results not sent to a viewer whose data channel was backed up.
func (s *Server) ResultsDropped() int64 { return s.resultsDropped.Load() }

// LiveOffer implements defs.Live.
func (s *Server) LiveOffer(ctx context.Context, stream, offer string, reorder bool) (string, string, error) {
	if len(offer) > maxOffer || !strings.HasPrefix(offer, "v=0") {
		return "", "", fmt.Errorf("%w: an SDP offer (RFC 8866) of at most %d bytes starting with v=0", defs.ErrLiveOffer, maxOffer)
	}
	if n := strings.Count(offer, "\na=candidate:"); n > maxCandidates {
		return "", "", fmt.Errorf("%w: %d ICE candidates; at most %d", defs.ErrLiveOffer, n, maxCandidates)
	}
	if !reorder && s.hub.Reorders(stream) {
		return "", "", defs.ErrLiveReorder
	}
	codec := s.hub.Codec(stream)
	v, err := s.hub.Join(stream)
	if err != nil {
		return "", "", err
	}
	answer, ss, err := s.start(ctx, stream, codec, offer, v)
	if err != nil {
		v.Leave()
		return "", "", err
	}
	return answer, ss.id, nil
}

// LiveClose implements defs.Live.
func (s *Server) LiveClose(stream, id string) error {
	s.mu.Lock()
	ss := s.sessions[id]
	if ss != nil && ss.stream == stream {
		delete(s.sessions, id) // gone for the next call, while its goroutines wind down
	}
	s.mu.Unlock()
	if ss == nil || ss.stream != stream {
		return defs.ErrLiveSession
	}
	ss.end(ErrLeft)
	return nil
}

// mimeOf is the RTP media type of codec (RFC 6184, RFC 7798).
func mimeOf(c media.Codec) string {
	if c == media.CodecH265 {
		return webrtc.MimeTypeH265
	}
	return webrtc.MimeTypeH264
}

// offers reports whether the SDP offer lists the media type (e.g. "H264") in an rtpmap line.
func offers(offer, codec string) bool {
	return strings.Contains(strings.ToUpper(offer), " "+strings.ToUpper(codec)+"/90000")
}

func (s *Server) start(ctx context.Context, stream string, codec media.Codec, offer string, v *Viewer) (string, *session, error) {
	if codec == media.CodecUnknown {
		codec = media.CodecH264 // no access unit yet: most cameras
	}
	mime := mimeOf(codec)
	if !offers(offer, strings.TrimPrefix(mime, "video/")) {
		return "", nil, fmt.Errorf("%w: stream %s is %s; the offer has no %s", defs.ErrLiveCodec, stream, codec, mime)
	}
	pc, err := s.api.NewPeerConnection(webrtc.Configuration{ICEServers: s.servers})
	if err != nil {
		return "", nil, fmt.Errorf("liveview: %w", err)
	}
	fail := func(err error) (string, *session, error) {
		_ = pc.Close()
		return "", nil, err
	}
	track, err := webrtc.NewTrackLocalStaticRTP(webrtc.RTPCodecCapability{MimeType: mime, ClockRate: 90000}, "video", "vinfer-"+stream)
	if err != nil {
		return fail(fmt.Errorf("liveview: %w", err))
	}
	sender, err := pc.AddTrack(track)
	if err != nil {
		return fail(fmt.Errorf("liveview: %w", err))
	}
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer}); err != nil {
		return fail(fmt.Errorf("%w: %v", defs.ErrLiveOffer, err))
	}
	ans, err := pc.CreateAnswer(nil)
	if err != nil {
		return fail(fmt.Errorf("%w: %v", defs.ErrLiveOffer, err))
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(ans); err != nil {
		return fail(fmt.Errorf("liveview: %w", err))
	}
	t := time.NewTimer(gatherTimeout)
	defer t.Stop()
	select {
	case <-gathered:
	case <-t.C:
		return fail(fmt.Errorf("liveview: gathering ICE candidates took over %v", gatherTimeout))
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	ss := &session{id: hex.EncodeToString(id[:]), srv: s, stream: stream, pc: pc, track: track, viewer: v,
		codec: codec, connected: make(chan struct{}), done: make(chan struct{})}
	pc.OnConnectionStateChange(func(st webrtc.PeerConnectionState) {
		switch st {
		case webrtc.PeerConnectionStateConnected:
			ss.connectOnce.Do(func() { close(ss.connected) })
		case webrtc.PeerConnectionStateFailed, webrtc.PeerConnectionStateClosed:
			ss.end(fmt.Errorf("peer connection %s", st))
		}
	})
	pc.OnDataChannel(func(dc *webrtc.DataChannel) {
		if dc.Label() == "results" && s.results != nil {
			dc.OnOpen(func() { ss.sendResults(dc) })
		}
	})
	s.mu.Lock()
	if s.ctx.Err() != nil {
		s.mu.Unlock()
		return fail(errors.New("liveview: server closing"))
	}
	s.sessions[ss.id] = ss
	s.wg.Add(3)
	s.mu.Unlock()
	s.started.Add(1)
	go func() { // RTCP from the viewer (receiver reports, NACK, PLI) feeds the interceptors
		defer s.wg.Done()
		buf := make([]byte, 1500)
		for {
			if _, _, err := sender.Read(buf); err != nil {
				return
			}
		}
	}()
	go func() {
		defer s.wg.Done()
		ss.send()
	}()
	go func() {
		defer s.wg.Done()
		<-ss.done
		_ = pc.Close()
		s.mu.Lock()
		delete(s.sessions, ss.id)
		s.mu.Unlock()
	}()
	s.log.Debug("liveview: session", "stream", stream, "session", ss.id, "codec", codec)
	return pc.LocalDescription().SDP, ss, nil
}
