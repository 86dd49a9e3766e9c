package liveview

import (
	"errors"
	"sync"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/rtp/codecs"
	"github.com/pion/webrtc/v4"

	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/media"
)

// mtu is the RTP payload size (an Ethernet MTU less IP, UDP, SRTP and header extensions).
const mtu = 1200

// clock is the RTP clock of video (RFC 3551 §5: 90 kHz).
const clock = 90000

// session is one viewer's peer connection.
type session struct {
	id          string
	srv         *Server
	stream      string
	pc          *webrtc.PeerConnection
	track       *webrtc.TrackLocalStaticRTP
	viewer      *Viewer
	codec       media.Codec
	connected   chan struct{}
	connectOnce sync.Once
	done        chan struct{}
	endOnce     sync.Once
}

// end ends the session once (why is logged).
func (ss *session) end(why error) {
	ss.endOnce.Do(func() {
		ss.srv.log.Debug("liveview: session ended", "stream", ss.stream, "session", ss.id, "why", why)
		close(ss.done)
	})
}

// rtpTime is a PTS on the RTP clock (wraps after 13 h, as RTP timestamps do).
func rtpTime(pts time.Duration) uint32 {
	return uint32(pts.Nanoseconds() * clock / int64(time.Second))
}

// send packetizes the viewer's access units once connected, from the first key frame after
// connecting on; the RTP timestamps are the PTS, so frames with B-frames keep their order.
func (ss *session) send() {
	defer ss.viewer.Leave()
	t := time.NewTimer(connectTimeout)
	defer t.Stop()
	select {
	case <-ss.connected:
	case <-t.C:
		ss.end(errors.New("not connected within the connect timeout"))
		return
	case <-ss.done:
		return
	}
	var pay rtp.Payloader = &codecs.H264Payloader{}
	if ss.codec == media.CodecH265 {
		pay = &codecs.H265Payloader{}
	}
	var seq uint16
	key := false
	for {
		u, err := ss.viewer.Next(ss.done)
		if err != nil {
			ss.end(err)
			return
		}
		if u.Codec != ss.codec {
			ss.end(defs.ErrLiveCodec) // the stream changed codec: the viewer offers again
			return
		}
		if !key && !u.Key {
			continue
		}
		key = true
		ts := rtpTime(u.PTS)
		ps := pay.Payload(mtu, u.Data)
		for i, p := range ps {
			pkt := rtp.Packet{Header: rtp.Header{Version: 2, Marker: i == len(ps)-1, SequenceNumber: seq, Timestamp: ts}, Payload: p}
			seq++
			if err := ss.track.WriteRTP(&pkt); err != nil {
				ss.end(err)
				return
			}
		}
	}
}

// sendResults forwards the stream's results to the data channel until the session ends; a
// result that finds the channel backed up is dropped (counted).
func (ss *session) sendResults(dc *webrtc.DataChannel) {
	ss.srv.mu.Lock() // the server's Close waits for what runs: add to it only before it ends
	select {
	case <-ss.done:
		ss.srv.mu.Unlock()
		return
	default:
	}
	ss.srv.wg.Add(1)
	ss.srv.mu.Unlock()
	msgs, cancel := ss.srv.results.Subscribe(defs.Subscription{Stream: ss.stream})
	go func() {
		defer ss.srv.wg.Done()
		defer cancel()
		for {
			select {
			case <-ss.done:
				return
			case m, ok := <-msgs:
				if !ok {
					return
				}
				if dc.BufferedAmount() > resultsBuffered {
					ss.srv.resultsDropped.Add(1)
					continue
				}
				if err := dc.SendText(string(m)); err != nil {
					return
				}
			}
		}
	}()
}
