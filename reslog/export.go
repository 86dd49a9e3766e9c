package reslog

import (
	"strconv"

	"github.com/vinfer/vinfer/internal/jsonenc"
	"github.com/vinfer/vinfer/track/mot"
)

// AppendJSON appends f as one JSON line (with its newline), boxes to a tenth of a pixel and
// scores to 4 decimals as in the live results:
//
//	{"frame":12,"pts":0.48,"time":"2026-12-06T02:00:00.123456Z","width":768,"height":432,
//	 "objects":[{"track_id":3,"class_id":0,"label":"person","score":0.8812,"box":[x1,y1,x2,y2],"zones":["door"]}]}
func AppendJSON(b []byte, f *Frame) []byte {
	b = append(b, `{"frame":`...)
	b = strconv.AppendInt(b, f.Frame, 10)
	b = append(b, `,"pts":`...)
	b = strconv.AppendFloat(b, float64(f.PTS)/1e9, 'f', -1, 64) // 6.56, not Seconds()' 6.5600000000000005
	b = append(b, `,"time":"`...)
	b = f.Wall.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z07:00")
	b = append(b, `","width":`...)
	b = strconv.AppendInt(b, int64(f.Width), 10)
	b = append(b, `,"height":`...)
	b = strconv.AppendInt(b, int64(f.Height), 10)
	b = append(b, `,"objects":[`...)
	for i := range f.Objects {
		o := &f.Objects[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"track_id":`...)
		b = strconv.AppendInt(b, o.TrackID, 10)
		b = append(b, `,"class_id":`...)
		b = strconv.AppendInt(b, int64(o.ClassID), 10)
		b = append(b, `,"label":`...)
		b = jsonenc.String(b, o.Label)
		b = append(b, `,"score":`...)
		b = jsonenc.Float32(b, o.Score, 4)
		b = append(b, `,"box":[`...)
		for k, v := range o.Box {
			if k > 0 {
				b = append(b, ',')
			}
			b = jsonenc.Float32(b, v, 1)
		}
		b = append(b, ']')
		if len(o.Zones) > 0 {
			b = append(b, `,"zones":[`...)
			for k, z := range o.Zones {
				if k > 0 {
					b = append(b, ',')
				}
				b = jsonenc.String(b, z)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	return append(b, "]}\n"...)
}

// AppendMOT appends f's objects as MOTChallenge result rows (frame,id,x,y,w,h,conf,-1,-1,-1):
// frame is Frame+1 (MOTChallenge counts from 1), id the track id (-1 untracked).
func AppendMOT(b []byte, f *Frame) []byte {
	for i := range f.Objects {
		o := &f.Objects[i]
		id := o.TrackID
		if id == 0 {
			id = -1
		}
		x1, y1 := float64(qBox(o.Box[0]))/boxScale, float64(qBox(o.Box[1]))/boxScale
		x2, y2 := float64(qBox(o.Box[2]))/boxScale, float64(qBox(o.Box[3]))/boxScale
		b = mot.AppendResult(b, mot.Row{Frame: int(f.Frame + 1), ID: id, X: x1, Y: y1, W: x2 - x1, H: y2 - y1,
			Conf: float64(qScore(o.Score)) / scoreScale})
	}
	return b
}
