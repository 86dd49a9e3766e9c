package record

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mp4/codecs"

	"github.com/vinfer/vinfer/media"
)

// Replay hands fn the recorded access units of stream in [from, to), oldest first, each with
// its wall time: the coded video as recorded, Annex B with the parameter sets before each
// key frame, from the start of the GOP (fragment) that holds from to the end of the one that
// holds to. DTS and PTS run on one timeline from 0 (gaps between segments closed up). An
// error of fn, or ctx ending, stops it and is returned. Errors: ErrNoStream, ErrNothing
// (nothing recorded in the range).
func (r *Recorder) Replay(ctx context.Context, stream string, from, to time.Time, fn func(au *media.AccessUnit, at time.Time) error) error {
	segs, err := r.Segments(stream, from, to)
	if err != nil {
		return err
	}
	var (
		sent          bool
		offset, shift time.Duration // the timeline's end so far; the first unit's DTS
		codec         media.Codec
		paramSets     []byte // Annex B, before each key frame
		first         = true
	)
	for _, s := range segs {
		f, err := os.Open(filepath.Join(r.Dir, stream, s.Name))
		if err != nil {
			continue // removed by retention meanwhile
		}
		var segEnd time.Duration
		err = fragments(f, func(head []byte) bool {
			var in fmp4.Init
			if err := in.Unmarshal(bytes.NewReader(head)); err != nil || len(in.Tracks) != 1 {
				return false
			}
			codec, paramSets = annexBParams(in.Tracks[0].Codec)
			return codec != media.CodecUnknown
		}, func(frag []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			var parts fmp4.Parts
			if err := parts.Unmarshal(frag); err != nil || len(parts) != 1 || len(parts[0].Tracks) != 1 {
				return nil // a fragment not of ours: skipped
			}
			t := parts[0].Tracks[0]
			var dur uint64
			for _, sm := range t.Samples {
				dur += uint64(sm.Duration)
			}
			segEnd = max(segEnd, tickDur(t.BaseTime+dur))
			at := s.Start.Add(tickDur(t.BaseTime))
			if !at.Before(to) {
				return errStop
			}
			if !at.Add(tickDur(dur)).After(from) {
				return nil
			}
			if first {
				shift, first = offset+tickDur(t.BaseTime), false
			}
			dts := t.BaseTime
			for _, sm := range t.Samples {
				au := &media.AccessUnit{Codec: codec, Key: !sm.IsNonSyncSample,
					DTS: offset + tickDur(dts) - shift, PTS: offset + tickDur(uint64(int64(dts)+int64(sm.PTSOffset))) - shift}
				if au.Key {
					au.Data = append(au.Data, paramSets...)
				}
				au.Data = annexB(sm.Payload, au.Data)
				if err := fn(au, s.Start.Add(tickDur(dts))); err != nil {
					return err
				}
				sent = true
				dts += uint64(sm.Duration)
			}
			return nil
		})
		f.Close()
		if err != nil && err != errStop {
			return err
		}
		offset += segEnd
	}
	if !sent {
		return ErrNothing
	}
	return nil
}

func tickDur(t uint64) time.Duration { return time.Duration(t) * time.Second / timescale }

// annexBParams is the codec and parameter sets (Annex B) of a sample entry.
func annexBParams(c codecs.Codec) (media.Codec, []byte) {
	sc := []byte{0, 0, 0, 1}
	var b []byte
	switch c := c.(type) {
	case *codecs.H264:
		for _, n := range [][]byte{c.SPS, c.PPS} {
			b = append(append(b, sc...), n...)
		}
		return media.CodecH264, b
	case *codecs.H265:
		for _, n := range [][]byte{c.VPS, c.SPS, c.PPS} {
			b = append(append(b, sc...), n...)
		}
		return media.CodecH265, b
	}
	return media.CodecUnknown, nil
}

// annexB appends the NAL units of 4-byte length-prefixed avcc to dst, each after a start
// code; a length past the end ends it.
func annexB(avcc, dst []byte) []byte {
	for len(avcc) >= 4 {
		n := int(binary.BigEndian.Uint32(avcc))
		if n > len(avcc)-4 {
			break
		}
		dst = append(append(dst, 0, 0, 0, 1), avcc[4:4+n]...)
		avcc = avcc[4+n:]
	}
	return dst
}
