// Package onnxedit rewrites ONNX models (onnx/onnx.proto, read and written with protowire, no
// generated bindings) so that vinfer can batch them: a model exported with a fixed batch of 1
// gets a symbolic batch dimension, and YOLOX's Focus block (strided Slices, which the CUDA
// plugin provider crashes on) becomes one equivalent Conv; and so that it can compute in
// float16 on a GPU (FP16, fp16.go).
//
// Only the messages a rewrite touches are decoded; everything else (weights, unknown fields)
// is copied as it is. Rewrite and FP16 never panic on malformed input: they return an error
// wrapping ErrNotONNX, an *UnsupportedError naming what blocks the rewrite, or ErrUnchanged.
package onnxedit

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// BatchSymbol is the name a rewritten model gives its batch dimension.
const BatchSymbol = "batch"

// Options selects the rewrites.
type Options struct {
	// FocusConv replaces every Focus block (four pairs of stride-2 Slices on H and W of the image
	// input feeding one Concat on channels: space-to-depth by 2) with one stride-2 2×2 Conv whose
	// weights are one-hot, so each output is one input value times 1: exact.
	FocusConv bool
}

// Report says what a rewrite did.
type Report struct {
	// FromBatch is the input's fixed batch (1) when it was made dynamic, 0 when the batch was
	// dynamic already.
	FromBatch int64
	// Reshapes is the number of Reshape target shapes whose batch of 1 became 0 (copy the
	// input's dimension).
	Reshapes int
	// FocusSlices is the number of Slice nodes the Focus Conv replaced.
	FocusSlices int
	// ValueInfo is the number of intermediate shapes dropped (ONNX Runtime infers them again).
	ValueInfo int
}

func (r Report) String() string {
	var parts []string
	if r.FromBatch > 0 {
		parts = append(parts, fmt.Sprintf("batch %d → %s, %d Reshape(s) patched, %d value_info dropped", r.FromBatch, BatchSymbol, r.Reshapes, r.ValueInfo))
	}
	if r.FocusSlices > 0 {
		parts = append(parts, fmt.Sprintf("Focus: %d Slices → 1 Conv", r.FocusSlices))
	}
	if len(parts) == 0 {
		return "unchanged"
	}
	return strings.Join(parts, "; ")
}

// ErrNotONNX marks bytes that are not an ONNX model (malformed protobuf, no graph).
var ErrNotONNX = errors.New("not an ONNX model")

// ErrUnchanged: the batch is dynamic already and no other rewrite applies.
var ErrUnchanged = errors.New("nothing to rewrite: the batch is dynamic already")

// UnsupportedError says why a well-formed model cannot be rewritten safely.
type UnsupportedError struct {
	Reason string
	// What names the rewrite refused ("" : the dynamic batch).
	What string
}

func (e *UnsupportedError) Error() string {
	return cmp.Or(e.What, "cannot make the batch dynamic") + ": " + e.Reason
}

func unsupported(format string, args ...any) error {
	return &UnsupportedError{Reason: fmt.Sprintf(format, args...)}
}

func notONNX(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotONNX, fmt.Sprintf(format, args...))
}

// graph is the parsed part of a GraphProto a rewrite works on.
type graph struct {
	msg       message
	nodes     []*node
	inits     map[string]message // initializer TensorProtos by name
	consts    map[string]bool    // values computable without the inputs
	constNode map[string]*node   // Constant nodes by output
	producer  map[string]*node
	users     map[string][]use
	input     string // the one non-initializer input
	inShape   shape
	names     map[string]bool // every value name
}

// use is one place a value is read: node n's input slot.
type use struct {
	n    *node
	slot int
}

// Rewrite returns model with a dynamic batch: the first dimension of the graph's input (fixed
// at 1) and of every output becomes BatchSymbol, Reshape target shapes that hard-code the
// batch of 1 get 0 (ONNX Reshape without allowzero: copy the input's dimension) and
// value_info is dropped; with opt.FocusConv, Focus blocks become one Conv (also when the batch
// is dynamic already). The graph must have one non-initializer input [N,C,H,W]; a graph with
// subgraphs, model-local functions, or Reshape targets that fold the batch into another
// dimension is refused (*UnsupportedError). The rewrite is static: that a batch of n gives the
// n results of batch 1 is for the caller to check (vinfer runs both).
func Rewrite(model []byte, opt Options) ([]byte, Report, error) {
	var rep Report
	m, gb, opset, err := parseModel(model, unsupported)
	if err != nil {
		return nil, rep, err
	}
	g, err := parseGraph(gb)
	if err != nil {
		return nil, rep, err
	}
	if len(g.inShape.dims) != 4 {
		return nil, rep, unsupported("input %s has %d dimensions, want 4 (N,C,H,W)", g.input, len(g.inShape.dims))
	}
	switch b := g.inShape.dims[0]; {
	case b == 1:
		rep.FromBatch = 1
	case b < 0:
	default:
		return nil, rep, unsupported("input %s has a fixed batch of %d", g.input, b)
	}

	patched := map[string][]int64{} // shape constant → new values
	if rep.FromBatch > 0 {
		if opset < 5 {
			return nil, rep, unsupported("opset %d: Reshape takes its shape as an attribute before opset 5", opset)
		}
		if err := g.checkOutputs(); err != nil {
			return nil, rep, err
		}
		if patched, err = g.reshapes(); err != nil {
			return nil, rep, err
		}
		rep.Reshapes = len(patched)
	}
	var focus []focusBlock
	if opt.FocusConv {
		if focus, err = g.findFocus(); err != nil {
			return nil, rep, err
		}
		rep.FocusSlices = 8 * len(focus)
	}
	if rep.FromBatch == 0 && len(focus) == 0 {
		return nil, rep, ErrUnchanged
	}
	out, n, err := g.rebuild(rep.FromBatch > 0, patched, focus)
	if err != nil {
		return nil, rep, err
	}
	rep.ValueInfo = n
	return m.withBytes(modelGraph, out).marshal(), rep, nil
}

// parseModel parses a ModelProto with an ir_version, one graph and no local functions, and
// returns it with its GraphProto bytes and ai.onnx opset version. Errors wrap ErrNotONNX;
// local functions give unsup's error (the caller's *UnsupportedError flavour).
func parseModel(model []byte, unsup func(string, ...any) error) (m message, graph []byte, opset int64, err error) {
	m, err = parse(model)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("%w: %v", ErrNotONNX, err)
	}
	if _, ok := m.varint(modelIRVersion); !ok {
		return nil, nil, 0, notONNX("no ir_version")
	}
	gs := m.messages(modelGraph)
	if len(gs) != 1 {
		return nil, nil, 0, notONNX("%d graphs, want 1", len(gs))
	}
	if len(m.messages(modelFunctions)) > 0 {
		return nil, nil, 0, unsup("the model defines local functions")
	}
	opset, err = defaultOpset(m)
	if err != nil {
		return nil, nil, 0, err
	}
	return m, gs[0], opset, nil
}

// defaultOpset returns the model's ai.onnx opset version.
func defaultOpset(m message) (int64, error) {
	for _, b := range m.messages(modelOpset) {
		o, err := parse(b)
		if err != nil {
			return 0, fmt.Errorf("%w: opset_import: %v", ErrNotONNX, err)
		}
		if d := o.str(opsetDomain); d == "" || d == "ai.onnx" {
			v, _ := o.varint(opsetVersion)
			return int64(v), nil
		}
	}
	return 0, notONNX("no ai.onnx opset_import")
}

func parseGraph(b []byte) (*graph, error) {
	gm, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("%w: graph: %v", ErrNotONNX, err)
	}
	g := &graph{msg: gm, inits: map[string]message{}, consts: map[string]bool{}, constNode: map[string]*node{},
		producer: map[string]*node{}, users: map[string][]use{}, names: map[string]bool{}}
	for _, tb := range gm.messages(graphInitializer) {
		t, err := parse(tb)
		if err != nil {
			return nil, fmt.Errorf("%w: initializer: %v", ErrNotONNX, err)
		}
		name := t.str(tensorName)
		g.inits[name], g.consts[name], g.names[name] = t, true, true
	}
	for _, sb := range gm.messages(graphSparseInit) {
		// SparseTensorProto.values (field 1) is a TensorProto whose name is the initializer's.
		s, err := parse(sb)
		if err != nil {
			return nil, fmt.Errorf("%w: sparse initializer: %v", ErrNotONNX, err)
		}
		vb, _ := s.bytesField(1)
		v, err := parse(vb)
		if err != nil {
			return nil, fmt.Errorf("%w: sparse initializer: %v", ErrNotONNX, err)
		}
		g.consts[v.str(tensorName)], g.names[v.str(tensorName)] = true, true
	}
	for _, nb := range gm.messages(graphNode) {
		n, err := parseNode(nb)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNotONNX, err)
		}
		sub, err := n.hasSubgraph()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNotONNX, err)
		}
		if sub {
			return nil, unsupported("node %s (%s) holds a subgraph", n.name, n.op)
		}
		g.nodes = append(g.nodes, n)
		// Nodes are in topological order (ONNX IR): a node whose inputs are all constant
		// computes a constant.
		isConst := true
		for i, in := range n.inputs {
			if in == "" {
				continue
			}
			g.users[in] = append(g.users[in], use{n, i})
			isConst = isConst && g.consts[in]
		}
		for _, o := range n.outputs {
			if o == "" {
				continue
			}
			g.producer[o], g.names[o] = n, true
			if isConst {
				g.consts[o] = true
			}
		}
		if n.op == "Constant" && n.isONNX() && len(n.outputs) == 1 {
			g.constNode[n.outputs[0]] = n
		}
	}
	if len(g.nodes) == 0 {
		return nil, notONNX("the graph has no nodes")
	}
	var inputs []string
	for _, vb := range gm.messages(graphInput) {
		name, s, ok, err := valueShape(vb)
		if err != nil {
			return nil, fmt.Errorf("%w: graph input: %v", ErrNotONNX, err)
		}
		g.names[name] = true
		if _, init := g.inits[name]; init {
			continue // IR < 4 lists initializers as inputs
		}
		inputs = append(inputs, name)
		if !ok {
			return nil, unsupported("input %s is not a tensor with a shape", name)
		}
		g.input, g.inShape = name, s
	}
	if len(inputs) != 1 {
		return nil, unsupported("the graph has %d inputs %v, want 1 image input", len(inputs), inputs)
	}
	return g, nil
}

// checkOutputs verifies that every graph output has the fixed batch 1 first.
func (g *graph) checkOutputs() error {
	outs := g.msg.messages(graphOutput)
	if len(outs) == 0 {
		return notONNX("the graph has no outputs")
	}
	for _, vb := range outs {
		name, s, ok, err := valueShape(vb)
		if err != nil {
			return fmt.Errorf("%w: graph output: %v", ErrNotONNX, err)
		}
		if !ok || len(s.dims) == 0 {
			return unsupported("output %s declares no shape", name)
		}
		if s.dims[0] != 1 {
			return unsupported("output %s has %v first, not the batch of 1", name, dimString(s, 0))
		}
	}
	return nil
}

func dimString(s shape, i int) string {
	if s.dims[i] >= 0 {
		return fmt.Sprint(s.dims[i])
	}
	if s.syms[i] != "" {
		return s.syms[i]
	}
	return "?"
}

// constInts returns the values of a constant held directly in an initializer or a Constant
// node; ok is false for a value computed by other nodes.
func (g *graph) constInts(name string) (v []int64, ok bool, err error) {
	if t, is := g.inits[name]; is {
		v, err = tensorInts(t)
		return v, true, err
	}
	n := g.constNode[name]
	if n == nil {
		return nil, false, nil
	}
	if a, err := n.attr("value_ints"); err != nil || a != nil {
		if err != nil {
			return nil, true, err
		}
		v, err = a.ints(attrInts)
		return v, true, err
	}
	a, err := n.attr("value")
	if err != nil || a == nil {
		return nil, false, err
	}
	tb, has := a.bytesField(attrT)
	if !has {
		return nil, false, nil
	}
	t, err := parse(tb)
	if err != nil {
		return nil, true, err
	}
	v, err = tensorInts(t)
	return v, true, err
}

// reshapes finds the Reshape target shapes to patch: a constant target whose first value is 1
// for data that depends on the input. It refuses targets that put another number first
// (the batch folded into a dimension) or are computed from constants.
func (g *graph) reshapes() (map[string][]int64, error) {
	patch := map[string][]int64{}
	for _, n := range g.nodes {
		if n.op != "Reshape" || !n.isONNX() {
			continue
		}
		if len(n.inputs) < 2 || n.inputs[1] == "" {
			return nil, unsupported("Reshape %s has no shape input", n.name)
		}
		if g.consts[n.inputs[0]] || !g.consts[n.inputs[1]] {
			continue // reshapes a constant, or to a shape computed from the input's
		}
		v, direct, err := g.constInts(n.inputs[1])
		if err != nil {
			return nil, fmt.Errorf("%w: Reshape %s: %v", ErrNotONNX, n.name, err)
		}
		if !direct {
			return nil, unsupported("Reshape %s: its target shape is computed from constants (fold them first, e.g. onnxsim)", n.name)
		}
		if len(v) == 0 {
			continue
		}
		allowZero, err := n.intAttr("allowzero", 0)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNotONNX, err)
		}
		switch {
		case v[0] == 0 && allowZero == 0, v[0] == -1:
			continue
		case v[0] != 1:
			return nil, unsupported("Reshape %s to %v puts %d first, not the batch", n.name, v, v[0])
		case allowZero != 0:
			return nil, unsupported("Reshape %s has allowzero=1", n.name)
		}
		for _, u := range g.users[n.inputs[1]] {
			if u.n.op != "Reshape" || u.slot != 1 || g.consts[u.n.inputs[0]] {
				return nil, unsupported("shape constant %s of Reshape %s is also read by %s (%s)", n.inputs[1], n.name, u.n.name, u.n.op)
			}
		}
		p := slices.Clone(v)
		p[0] = 0
		patch[n.inputs[1]] = p
	}
	return patch, nil
}

// rebuild encodes the graph with the batch dims made symbolic (batch), the shape constants
// patched and the Focus blocks replaced. It returns the GraphProto and the number of
// value_info entries dropped.
func (g *graph) rebuild(batch bool, patch map[string][]int64, focus []focusBlock) ([]byte, int, error) {
	drop := map[*node]bool{}
	replace := map[*node][]byte{}
	var extraInits [][]byte
	for _, f := range focus {
		for _, s := range f.slices {
			drop[s] = true
		}
		nb, wb := g.focusConv(f)
		replace[f.concat] = nb
		extraInits = append(extraInits, wb)
	}
	for name, v := range patch {
		n := g.constNode[name]
		if n == nil {
			continue
		}
		nb, err := patchConstant(n, v)
		if err != nil {
			return nil, 0, err
		}
		replace[n] = nb
	}
	var out message
	dropped, k := 0, 0
	for _, f := range g.msg {
		switch f.num {
		case graphNode:
			if f.typ != 2 {
				out = append(out, f)
				continue
			}
			n := g.nodes[k]
			k++
			if drop[n] {
				continue
			}
			if b, ok := replace[n]; ok {
				f.val = b
			}
		case graphInitializer:
			t, err := parse(f.val)
			if err != nil {
				return nil, 0, err
			}
			if v, ok := patch[t.str(tensorName)]; ok {
				f.val = withInt64s(t, v).marshal()
			}
		case graphInput:
			if batch {
				name, _, _, _ := valueShape(f.val)
				if name == g.input {
					b, err := withBatchDim(f.val, BatchSymbol)
					if err != nil {
						return nil, 0, err
					}
					f.val = b
				}
			}
		case graphOutput:
			if batch {
				b, err := withBatchDim(f.val, BatchSymbol)
				if err != nil {
					return nil, 0, err
				}
				f.val = b
			}
		case graphValueInfo:
			dropped++
			continue
		}
		out = append(out, f)
	}
	for _, b := range extraInits {
		out = append(out, bytesFieldOf(graphInitializer, b))
	}
	return out.marshal(), dropped, nil
}

// patchConstant returns the Constant node n with its int64 value replaced by v.
func patchConstant(n *node, v []int64) ([]byte, error) {
	msg := slices.Clone(n.msg)
	for i := range msg {
		if msg[i].num != nodeAttr || msg[i].typ != 2 {
			continue
		}
		a, err := parse(msg[i].val)
		if err != nil {
			return nil, err
		}
		switch a.str(attrName) {
		case "value":
			tb, _ := a.bytesField(attrT)
			t, err := parse(tb)
			if err != nil {
				return nil, err
			}
			if dt, _ := t.varint(tensorDataType); dt != dtypeInt64 {
				return nil, unsupported("Constant %s holds a shape of data type %d, not int64", n.name, dt)
			}
			msg[i].val = a.withBytes(attrT, withInt64s(t, v).marshal()).marshal()
		case "value_ints":
			msg[i].val = intsAttr("value_ints", v)
		}
	}
	return msg.marshal(), nil
}
