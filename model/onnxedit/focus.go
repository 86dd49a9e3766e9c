package onnxedit

import (
	"fmt"
	"strconv"
)

// focusBlock is one Focus block: Concat(axis 1) of four Slice(Slice(input)) chains, each pair
// taking every second row and column from offset (dy, dx).
type focusBlock struct {
	concat  *node
	slices  []*node     // the 8 Slices
	offsets [4][2]int64 // (dy, dx) of Concat input k
}

// findFocus finds the Focus blocks that read the image input directly. A Concat of four Slice
// chains that does not match exactly (other strides, axes or readers) is left alone.
func (g *graph) findFocus() ([]focusBlock, error) {
	var out []focusBlock
	for _, cat := range g.nodes {
		if cat.op != "Concat" || !cat.isONNX() || len(cat.inputs) != 4 || len(cat.outputs) != 1 {
			continue
		}
		axis, err := cat.intAttr("axis", 0)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNotONNX, err)
		}
		if axis != 1 && axis != -3 {
			continue
		}
		b, ok, err := g.matchFocus(cat)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, b)
		}
	}
	return out, nil
}

func (g *graph) matchFocus(cat *node) (focusBlock, bool, error) {
	b := focusBlock{concat: cat}
	s := g.inShape
	// C ≤ 64 bounds the weights (16·C² floats).
	if s.elem != dtypeFloat || len(s.dims) != 4 || s.dims[1] <= 0 || s.dims[1] > 64 || s.dims[2] <= 0 || s.dims[3] <= 0 || s.dims[2]%2 != 0 || s.dims[3]%2 != 0 {
		return b, false, nil
	}
	for k, in := range cat.inputs {
		second := g.producer[in]
		if !g.onlyUse(in, cat) || second == nil || second.op != "Slice" || !second.isONNX() || len(second.inputs) < 1 {
			return b, false, nil
		}
		first := g.producer[second.inputs[0]]
		if first == nil || first.op != "Slice" || !first.isONNX() || len(first.inputs) < 1 ||
			first.inputs[0] != g.input || !g.onlyUse(second.inputs[0], second) {
			return b, false, nil
		}
		var off [4]int64
		seen := [4]bool{}
		for _, sl := range []*node{first, second} {
			axis, start, ok, err := g.stride2(sl)
			if err != nil || !ok {
				return b, false, err
			}
			if seen[axis] {
				return b, false, nil
			}
			seen[axis], off[axis] = true, start
		}
		b.offsets[k] = [2]int64{off[2], off[3]}
		b.slices = append(b.slices, first, second)
	}
	return b, true, nil
}

// onlyUse reports whether value name is read once, by n, and is not a graph output.
func (g *graph) onlyUse(name string, n *node) bool {
	u := g.users[name]
	return len(u) == 1 && u[0].n == n && !g.isOutput(name)
}

func (g *graph) isOutput(name string) bool {
	for _, vb := range g.msg.messages(graphOutput) {
		if v, _, _, _ := valueShape(vb); v == name {
			return true
		}
	}
	return false
}

// stride2 matches a Slice of one axis (H=2 or W=3) from start 0 or 1 to the end with step 2,
// its starts, ends, axes and steps held in constants.
func (g *graph) stride2(sl *node) (axis, start int64, ok bool, err error) {
	if len(sl.inputs) != 5 {
		return 0, 0, false, nil
	}
	var v [4]int64
	for i := range 4 {
		x, direct, err := g.constInts(sl.inputs[i+1])
		if err != nil {
			return 0, 0, false, fmt.Errorf("%w: Slice %s: %v", ErrNotONNX, sl.name, err)
		}
		if !direct || len(x) != 1 {
			return 0, 0, false, nil
		}
		v[i] = x[0]
	}
	start, end, axis, step := v[0], v[1], v[2], v[3]
	if axis < 0 {
		axis += 4
	}
	if step != 2 || (axis != 2 && axis != 3) || (start != 0 && start != 1) || end < g.inShape.dims[axis] {
		return 0, 0, false, nil
	}
	return axis, start, true, nil
}

// focusConv returns the Conv node replacing block f (it writes the Concat's output) and its
// weight initializer [4C,C,2,2]: output channel k·C+c is input channel c at offset
// offsets[k].
func (g *graph) focusConv(f focusBlock) (nodeBytes, weight []byte) {
	c := g.inShape.dims[1]
	w := make([]float32, 4*c*c*4)
	for k, o := range f.offsets {
		for ch := range c {
			oc := int64(k)*c + ch
			w[((oc*c+ch)*2+o[0])*2+o[1]] = 1
		}
	}
	out := f.concat.outputs[0]
	wname := g.unique(out + "_vinfer_focus_w")
	name := g.unique("vinfer_focus_conv_" + out)
	n := message{
		bytesFieldOf(nodeInput, []byte(g.input)),
		bytesFieldOf(nodeInput, []byte(wname)),
		bytesFieldOf(nodeOutput, []byte(out)),
		bytesFieldOf(nodeName, []byte(name)),
		bytesFieldOf(nodeOpType, []byte("Conv")),
		bytesFieldOf(nodeAttr, intsAttr("kernel_shape", []int64{2, 2})),
		bytesFieldOf(nodeAttr, intsAttr("strides", []int64{2, 2})),
	}
	return n.marshal(), floatTensor(wname, []int64{4 * c, c, 2, 2}, w)
}

// unique returns name, suffixed with a number if the graph already has a value called that.
func (g *graph) unique(name string) string {
	u := name
	for i := 1; g.names[u]; i++ {
		u = name + "_" + strconv.Itoa(i)
	}
	g.names[u] = true
	return u
}
