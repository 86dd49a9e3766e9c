package file

import (
	"github.com/vinfer/vinfer/internal/h26x"
	"github.com/vinfer/vinfer/media"
)

// paramSets puts the parameter sets a demuxer found (the Annex-B extradata of MPEG-TS and raw
// streams) in front of key frames that arrive without them, so that every key access unit can
// start decoding (media.AccessUnit's contract).
type paramSets struct {
	codec media.Codec
	sets  []byte // Annex-B VPS/SPS/PPS from the extradata; nil: nothing to insert
	need  []h26x.Kind
	buf   []byte // reused output: sets followed by the access unit
}

// init takes the stream's Annex-B extradata.
func (p *paramSets) init(codec media.Codec, extradata []byte) {
	p.codec = codec
	p.need = []h26x.Kind{h26x.KindSPS, h26x.KindPPS}
	if codec == media.CodecH265 {
		p.need = append(p.need, h26x.KindVPS)
	}
	var sets []byte
	for rest := extradata; len(rest) > 0; {
		var nalu []byte
		nalu, rest = h26x.NextNALU(rest)
		switch h26x.Classify(codec, nalu) {
		case h26x.KindVPS, h26x.KindSPS, h26x.KindPPS:
			sets = append(sets, 0, 0, 0, 1)
			sets = append(sets, nalu...)
		}
	}
	p.sets = sets
}

// complete returns au (a key access unit), prefixed with the remembered parameter sets when it
// lacks one of them. The result is au itself or p's buffer, valid until the next call.
func (p *paramSets) complete(au []byte) []byte {
	if len(p.sets) == 0 {
		return au
	}
	var have [8]bool
	for rest := au; len(rest) > 0; {
		var nalu []byte
		nalu, rest = h26x.NextNALU(rest)
		k := h26x.Classify(p.codec, nalu)
		if k == h26x.KindKey || k == h26x.KindVCL {
			break // parameter sets come before the first slice
		}
		have[k] = true
	}
	missing := false
	for _, k := range p.need {
		missing = missing || !have[k]
	}
	if !missing {
		return au
	}
	p.buf = append(append(p.buf[:0], p.sets...), au...)
	return p.buf
}
