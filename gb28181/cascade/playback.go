package cascade

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/vinfer/vinfer/gb28181/manscdp"
	"github.com/vinfer/vinfer/media"
)

// Limits of playback and download (GB/T 28181-2016 §9.8, §9.9).
const (
	// maxPlaybacks is the most playbacks and downloads per upper platform at once (within
	// maxSessions); more INVITEs are answered 486.
	maxPlaybacks = 4
	// maxPlayRange bounds the range one INVITE asks.
	maxPlayRange = 24 * time.Hour
	// maxDownloadSpeed bounds a download's downloadspeed.
	maxDownloadSpeed = 16
	// playEndWait is how long a playback sent to its end waits for the BYE.
	playEndWait = time.Minute
)

// Errors of a playback's offer.
var (
	errPlayRange = errors.New("playback: t= range missing, reversed or over 24 h")
	errPlaySpeed = errors.New("playback: downloadspeed not 1…16")
)

// playback is what a playback or download INVITE asks (Annex C): the range, and the speed
// (1: real time; a download's downloadspeed).
type playback struct {
	from, to time.Time
	speed    int
	download bool
}

// playbackOf reads the session name of an offer: nil for a live view (s=Play), else the
// range of its t= line (Unix seconds) and the speed. Errors: errPlayRange, errPlaySpeed;
// another session name is errNotPlay.
func playbackOf(body []byte) (*playback, error) {
	var name, times, speed string
	for _, line := range strings.Split(string(body), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "s="):
			name = line[2:]
		case strings.HasPrefix(line, "t="):
			times = line[2:]
		case strings.HasPrefix(line, "a=downloadspeed:"):
			speed = strings.TrimPrefix(line, "a=downloadspeed:")
		}
	}
	switch name {
	case "Play":
		return nil, nil
	case "Playback", "Download":
	default:
		return nil, errNotPlay
	}
	p := &playback{speed: 1, download: name == "Download"}
	f := strings.Fields(times)
	if len(f) != 2 {
		return nil, errPlayRange
	}
	a, err1 := strconv.ParseInt(f[0], 10, 64)
	b, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || a <= 0 || b <= a || time.Duration(b-a)*time.Second > maxPlayRange {
		return nil, errPlayRange
	}
	p.from, p.to = time.Unix(a, 0), time.Unix(b, 0)
	if p.download && speed != "" {
		n, err := strconv.Atoi(strings.TrimSpace(speed))
		if err != nil || n < 1 || n > maxDownloadSpeed {
			return nil, errPlaySpeed
		}
		p.speed = n
	}
	return p, nil
}

// errNotPlay: an offer neither a live view, a playback nor a download.
var errNotPlay = errors.New("not a live view, playback or download")

// errFirst stops the look at a recording's first unit.
var errFirst = errors.New("first unit")

// recordedCodec returns the codec of stream's first recorded unit in p's range; false when
// nothing is recorded there (or recordings are not kept).
func (u *Upstream) recordedCodec(stream string, p *playback) (media.Codec, bool) {
	if u.c.Replay == nil {
		return media.CodecUnknown, false
	}
	c := media.CodecUnknown
	err := u.c.Replay(u.ctx, stream, p.from, p.to, func(au *media.AccessUnit, _ time.Time) error {
		c = au.Codec
		return errFirst
	})
	return c, errors.Is(err, errFirst)
}

// replay sends session s's recorded range, paced at speed × real time by the units' DTS, then
// notifies the end (MediaStatus 121, §9.8.2) in the session's Call-ID; BYE ends it sooner.
func (u *Upstream) replay(s *session, stream string) {
	start := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	err := u.c.Replay(s.ctx, stream, s.play.from, s.play.to, func(au *media.AccessUnit, _ time.Time) error {
		if wait := time.Until(start.Add(au.DTS / time.Duration(s.play.speed))); wait > 0 {
			timer.Reset(wait)
			select {
			case <-s.ctx.Done():
				return s.ctx.Err()
			case <-timer.C:
			}
		}
		return s.snd.Write(au)
	})
	if s.ctx.Err() != nil {
		return
	}
	if err != nil {
		u.log.Warn("GB28181 upstream: playback ended early", "channel", s.channel, "err", err)
	}
	u.Counters.PlaybacksEnded.Add(1)
	if res, err := u.messageIn(s.callID, manscdp.MediaStatusNotify(u.sn.Add(1), s.channel)); err != nil || res.StatusCode != 200 {
		u.log.Warn("GB28181 upstream: MediaStatus 121 not accepted", "channel", s.channel, "err", err, "status", status(res))
	}
	select {
	case <-s.ctx.Done(): // the upper platform's BYE
	case <-time.After(playEndWait):
		u.log.Warn("GB28181 upstream: playback ended but no BYE came; session dropped", "channel", s.channel)
	}
}

// playbacks is the number of playbacks and downloads being sent. Called with u.mu held.
func (u *Upstream) playbacksLocked() int {
	n := 0
	for _, s := range u.sessions {
		if s.play != nil {
			n++
		}
	}
	return n
}
