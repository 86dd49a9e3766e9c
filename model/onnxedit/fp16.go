package onnxedit

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// FP16 rewrites a float32 model to compute in float16 (IEEE 754 binary16) where that is safe,
// keeping its float32 input and outputs, so that a caller feeds and reads it as before:
//
//   - every node on a path into a Conv, ConvTranspose, MatMul or Gemm computes in float16, and
//     the float initializers and Constant tensors only such nodes read become float16 (values
//     beyond ±65504 clamped, counted in Report.Clamped);
//   - what stays float32: the first DefaultKeepFirst Conv/ConvTranspose/MatMul/Gemm nodes
//     (FP16Options.KeepFirst) and the nodes that feed only them, shape arithmetic (nodes computed from initializers, Constants and
//     Shape/Size alone), Resize's roi and scales and Upsample's scales, and the tail after the
//     last Conv/MatMul/Gemm on each path (the outputs' decode: sigmoids, exponentials, grids,
//     strides), whose pixel coordinates float16 would round to 0.5 px above 512, and a
//     Conv/MatMul/Gemm whose weights would lose more than 0.1 % of their L1 norm in float16
//     (subnormals; Report.Coarse);
//   - a Cast goes wherever a value meets a reader of the other precision: after the image
//     input, before the float32 tail, around kept shape arithmetic.
//
// With opt.HalfInput the image input itself becomes float16 (for a caller that writes float16,
// as vinfer's GPU preprocessing kernel can), without the Cast after it; refused where a node
// kept float32 reads the input (as the first layers by default: FP16Options.KeepFirst). value_info is dropped
// (ONNX Runtime infers it again). The model must hold one graph without subgraphs or local
// functions, default-domain operators this package knows the output types
// of, no external data and no float16 already; otherwise an *UnsupportedError says what.
// Errors wrap ErrNotONNX for bytes that are not a model; a graph with no Conv, MatMul or Gemm
// to convert gives an *UnsupportedError.
func FP16(model []byte, opt FP16Options) ([]byte, FP16Report, error) {
	var rep FP16Report
	m, gb, opset, err := parseModel(model, unsupported16)
	if err != nil {
		return nil, rep, err
	}
	if opset < 6 {
		return nil, rep, unsupported16("opset %d: Cast takes its type as a string before opset 6", opset)
	}
	g, err := parseGraph(gb)
	if err != nil {
		if ue, ok := err.(*UnsupportedError); ok {
			ue.What = fp16What
		}
		return nil, rep, err
	}
	c := &fp16Conv{g: g, rep: &rep, halfInput: opt.HalfInput && !opt.Emulate, emulate: opt.Emulate, keepFirst: opt.KeepFirst}
	out, err := c.run()
	if err != nil {
		return nil, rep, err
	}
	return m.withBytes(modelGraph, out).marshal(), rep, nil
}

// FP16Options selects variants of the float16 rewrite.
type FP16Options struct {
	// HalfInput makes the image input float16 (no Cast after it).
	HalfInput bool
	// Emulate keeps every value float32 but rounds each one the float16 graph would hold in
	// float16 to float16 (a Cast to float16 and one back after its producer, the converted
	// weights rounded in place), so that a float32 provider computes on float16 values with
	// float32 arithmetic, as a GPU's float16 convolutions accumulate in float32. For checking
	// a rewrite where no GPU is: run it with the graph optimizations off (ONNX Runtime may
	// fold a Cast pair). HalfInput is ignored (the Cast after the input rounds alike).
	Emulate bool
	// KeepFirst is how many of the first Conv/ConvTranspose/MatMul/Gemm nodes (in the graph's
	// topological order) stay float32, with what feeds only them: 0 means DefaultKeepFirst,
	// a negative number none.
	KeepFirst int
}

// DefaultKeepFirst is how many of a graph's n Conv/ConvTranspose/MatMul/Gemm nodes stay
// float32 at its input side: ⌊n/4⌋. Rounding the early, full-resolution layers' values to
// float16 moves a small detector's scores by up to 0.07 after the layers behind them
// (YOLOX-Nano; docs/models.md, Precision); rounding the later ones moves them by 0.005.
func DefaultKeepFirst(n int) int { return n / 4 }

// FP16Report says what FP16 did.
type FP16Report struct {
	// Initializers is the number of float initializers and Constant tensors made float16; Kept
	// those left float32 (read by float32 nodes).
	Initializers, Kept int
	// Clamped counts weights beyond float16's range (|w| > 65504) clamped to ±65504.
	Clamped int
	// Half and Full are the nodes computing in float16 and those kept float32.
	Half, Full int
	// Casts is the number of Cast nodes inserted.
	Casts int
	// First is the number of the first Conv/MatMul/Gemm nodes kept float32 (KeepFirst).
	First int
	// Coarse names the Conv/MatMul/Gemm nodes kept float32 because float16 would lose more
	// than 0.1 % of their weights' L1 norm, with that share.
	Coarse []string
}

func (r FP16Report) String() string {
	first := ""
	if r.First > 0 {
		first = fmt.Sprintf(", the first %d Conv/MatMul/Gemm among them", r.First)
	}
	s := fmt.Sprintf("float16: %d nodes (%d kept float32%s), %d tensors converted (%d kept), %d Casts inserted",
		r.Half, r.Full, first, r.Initializers, r.Kept, r.Casts)
	if len(r.Coarse) > 0 {
		s += fmt.Sprintf(", kept float32 for their weights: %s", strings.Join(r.Coarse, ", "))
	}
	if r.Clamped > 0 {
		s += fmt.Sprintf(", %d weights clamped to ±65504", r.Clamped)
	}
	return s
}

const fp16What = "cannot convert to float16"

func unsupported16(format string, args ...any) error {
	return &UnsupportedError{Reason: fmt.Sprintf(format, args...), What: fp16What}
}

// Field numbers and values used by the float16 rewrite (onnx.proto).
const (
	tensorFloat  = 4 // TensorProto.float_data
	dtypeFloat16 = 10
	dtypeBool    = 9
	attrF        = 2 // AttributeProto.f
	attrFloats   = 7
)

// heavy are the operators float16 speeds up: every node on a path into one of them computes
// in float16.
var heavy = map[string]bool{"Conv": true, "ConvTranspose": true, "MatMul": true, "Gemm": true}

// keep32 lists the input slots that stay float32 whatever the node's precision.
var keep32 = map[string][]int{"Resize": {1, 2}, "Upsample": {1}}

// anyType lists the operators whose input slot 0 takes any type: no Cast before them.
var anyType = map[string]bool{"Cast": true, "CastLike": true, "Shape": true, "Size": true}

// fixedOut lists the operators whose float outputs take their type from an attribute: they
// stay float32, and a Cast converts what they give a float16 reader.
var fixedOut = map[string]bool{"Constant": true, "ConstantOfShape": true, "EyeLike": true, "RandomNormal": true,
	"RandomUniform": true, "RandomNormalLike": true, "RandomUniformLike": true, "Multinomial": true}

// sameType lists the operators whose outputs have the type of input 0.
var sameType = map[string]bool{}

func init() {
	for _, op := range []string{"Abs", "Acos", "Acosh", "Add", "Asin", "Asinh", "Atan", "Atanh", "AveragePool",
		"BatchNormalization", "Celu", "Ceil", "Clip", "Concat", "Conv", "ConvTranspose", "Cos", "Cosh", "CumSum",
		"DepthToSpace", "Div", "Dropout", "Einsum", "Elu", "Erf", "Exp", "Expand", "Flatten", "Floor", "Gather",
		"GatherElements", "GatherND", "Gelu", "Gemm", "GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool",
		"GroupNormalization", "HardSigmoid", "HardSwish", "Hardmax", "Identity", "InstanceNormalization",
		"LayerNormalization", "LeakyRelu", "Log", "LogSoftmax", "LpNormalization", "LpPool", "LRN", "MatMul", "Max",
		"MaxPool", "MaxRoiPool", "Mean", "Min", "Mish", "Mod", "Mul", "Neg", "Pad", "Pow", "PRelu", "Range",
		"Reciprocal", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
		"ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare", "Relu", "Reshape", "Resize", "RoiAlign", "Round",
		"ScatterElements", "ScatterND", "Selu", "Shrink", "Sigmoid", "Sign", "Sin", "Sinh", "Slice", "Softmax",
		"Softplus", "Softsign", "SpaceToDepth", "Split", "Sqrt", "Squeeze", "Sub", "Sum", "Tan", "Tanh",
		"ThresholdedRelu", "Tile", "TopK", "Transpose", "Trilu", "Unsqueeze", "Upsample"} {
		sameType[op] = true
	}
}

// fixedTypes gives the operators whose outputs have a fixed type; -1 means the type of input 0.
var fixedTypes = map[string][]int64{
	"Shape": {dtypeInt64}, "Size": {dtypeInt64}, "ArgMax": {dtypeInt64}, "ArgMin": {dtypeInt64},
	"NonZero": {dtypeInt64}, "NonMaxSuppression": {dtypeInt64}, "TopK": {-1, dtypeInt64}, "MaxPool": {-1, dtypeInt64},
	"Equal": {dtypeBool}, "Less": {dtypeBool}, "LessOrEqual": {dtypeBool}, "Greater": {dtypeBool},
	"GreaterOrEqual": {dtypeBool}, "Not": {dtypeBool}, "And": {dtypeBool}, "Or": {dtypeBool}, "Xor": {dtypeBool},
	"IsNaN": {dtypeBool}, "IsInf": {dtypeBool}, "BatchNormalization": {-1}, "LayerNormalization": {-1, dtypeFloat, dtypeFloat},
	"Dropout": {-1, dtypeBool},
}

// fp16Conv is one conversion in progress.
type fp16Conv struct {
	g     *graph
	rep   *FP16Report
	types map[string]int64 // original element type of every value known
	half  map[*node]bool   // nodes computing in float16
	now   map[string]int64 // element type after the rewrite, for float values

	halfInput bool
	emulate   bool // FP16Options.Emulate
	keepFirst int  // FP16Options.KeepFirst
}

// precision of a node's float input slot: what its value must be.
func (c *fp16Conv) want(n *node, slot int) int64 {
	if slot == 0 && anyType[n.op] || n.op == "CastLike" {
		return 0 // any
	}
	if !c.half[n] {
		return dtypeFloat
	}
	for _, s := range keep32[n.op] {
		if s == slot {
			return dtypeFloat
		}
	}
	return dtypeFloat16
}

func (c *fp16Conv) run() ([]byte, error) {
	g := c.g
	if err := c.inferTypes(); err != nil {
		return nil, err
	}
	// Static values: computable from initializers, Constants and shapes alone.
	static := map[string]bool{}
	for name := range g.consts {
		static[name] = true
	}
	isStatic := map[*node]bool{}
	for _, n := range g.nodes {
		st := true
		for _, in := range n.inputs {
			st = st && (in == "" || static[in])
		}
		if st || n.op == "Shape" || n.op == "Size" {
			isStatic[n] = true
			for _, o := range n.outputs {
				static[o] = true
			}
		}
	}
	// The first heavy operators, and those whose weights float16 cannot hold closely, stay
	// float32.
	coarse := map[*node]bool{}
	keep, heavies := c.keepFirst, 0
	for _, n := range g.nodes {
		if heavy[n.op] {
			heavies++
		}
	}
	if keep == 0 {
		keep = DefaultKeepFirst(heavies)
	}
	seen := 0
	for _, n := range g.nodes {
		if !heavy[n.op] {
			continue
		}
		if seen++; seen <= keep {
			coarse[n] = true
			c.rep.First++
			continue
		}
		if len(n.inputs) > 1 {
			if loss, err := c.roundingLoss(n.inputs[1]); err != nil {
				return nil, err
			} else if loss > maxRoundingLoss {
				coarse[n] = true
				c.rep.Coarse = append(c.rep.Coarse, fmt.Sprintf("%s (%.2g%%)", n.name, 100*loss))
			}
		}
	}
	// Nodes on a path into a heavy operator, found backwards (nodes are in topological order).
	feeds := map[string]bool{} // values read by a node that feeds a heavy operator
	c.half = map[*node]bool{}
	for i := len(g.nodes) - 1; i >= 0; i-- {
		n := g.nodes[i]
		if coarse[n] {
			continue
		}
		f := heavy[n.op]
		for _, o := range n.outputs {
			f = f || feeds[o]
		}
		if !f {
			continue
		}
		for _, in := range n.inputs {
			feeds[in] = true
		}
		if !isStatic[n] && !fixedOut[n.op] {
			c.half[n] = true
		}
	}
	if len(c.half) == 0 {
		return nil, unsupported16("no Conv, ConvTranspose, MatMul or Gemm reads the input: nothing to run in float16")
	}
	c.rep.Half, c.rep.Full = len(c.half), len(g.nodes)-len(c.half)

	// Tensors held in the file (initializers, Constant nodes' value): float16 when every
	// reader wants float16.
	c.now = map[string]int64{}
	for name, t := range c.types {
		if t == dtypeFloat {
			c.now[name] = dtypeFloat
		}
	}
	if c.halfInput {
		if c.types[g.input] != dtypeFloat {
			return nil, unsupported16("input %s has type %d, not float", g.input, c.types[g.input])
		}
		for _, u := range g.users[g.input] {
			if c.want(u.n, u.slot) == dtypeFloat {
				return nil, unsupported16("input %s is read by %s %s, kept float32: a float16 input would lose precision", g.input, u.n.op, u.n.name)
			}
		}
		c.now[g.input] = dtypeFloat16
	}
	convert := map[string]bool{}
	for name := range c.now {
		_, init := g.inits[name]
		cn := g.constNode[name]
		if !init && (cn == nil || !hasAttr(cn, "value")) {
			continue
		}
		all := len(g.users[name]) > 0
		for _, u := range g.users[name] {
			all = all && c.want(u.n, u.slot) == dtypeFloat16
		}
		if all && !c.isOutput(name) {
			convert[name] = true
			c.now[name] = dtypeFloat16
			c.rep.Initializers++
		} else {
			c.rep.Kept++
		}
	}
	for _, n := range g.nodes {
		if !c.half[n] {
			continue
		}
		for i, o := range n.outputs {
			if o != "" && c.types[o] == dtypeFloat && (n.op != "Cast" || i > 0) {
				c.now[o] = dtypeFloat16
			}
		}
		if n.op == "Cast" && len(n.outputs) > 0 && n.outputs[0] != "" {
			if to, _ := n.intAttr("to", 0); to == dtypeFloat {
				c.now[n.outputs[0]] = dtypeFloat16
			}
		}
	}
	return c.rebuild(convert)
}

// maxRoundingLoss bounds the share of a weight tensor's L1 norm that rounding to float16 may
// lose (subnormal weights keep few bits) for its Conv/MatMul/Gemm to compute in float16.
const maxRoundingLoss = 1e-3

// roundingLoss returns Σ|w − float16(w)| / Σ|w| over the weights held in initializer name,
// 0 for weights computed by nodes.
func (c *fp16Conv) roundingLoss(name string) (float64, error) {
	t, ok := c.g.inits[name]
	if !ok {
		return 0, nil
	}
	if dt, _ := t.varint(tensorDataType); dt != dtypeFloat {
		return 0, nil
	}
	v, err := tensorFloats(t)
	if err != nil {
		return 0, err
	}
	var lost, sum float64
	for _, x := range v {
		h, _ := Float16(x)
		lost += math.Abs(float64(x) - float64(Float32(h)))
		sum += math.Abs(float64(x))
	}
	if sum == 0 {
		return 0, nil
	}
	return lost / sum, nil
}

// isOutput reports whether name is a graph output.
func (c *fp16Conv) isOutput(name string) bool {
	for _, vb := range c.g.msg.messages(graphOutput) {
		if n, _, _, _ := valueShape(vb); n == name {
			return true
		}
	}
	return false
}

func hasAttr(n *node, name string) bool {
	a, err := n.attr(name)
	return err == nil && a != nil
}

// inferTypes finds the element type of every value from the initializers, the input and each
// operator's rule; value_info fills in for operators without a rule.
func (c *fp16Conv) inferTypes() error {
	g := c.g
	c.types = map[string]int64{}
	hint := map[string]int64{}
	for _, vb := range g.msg.messages(graphValueInfo) {
		if name, s, _, err := valueShape(vb); err == nil && s.elem != 0 {
			hint[name] = s.elem
		}
	}
	for _, vb := range g.msg.messages(graphOutput) {
		if name, s, _, err := valueShape(vb); err == nil && s.elem != 0 {
			hint[name] = s.elem
		}
	}
	for name, t := range g.inits {
		dt, _ := t.varint(tensorDataType)
		c.types[name] = int64(dt)
		if loc, _ := t.varint(tensorLocation); loc != 0 && dt == dtypeFloat {
			return unsupported16("initializer %s holds external data", name)
		}
	}
	c.types[g.input] = g.inShape.elem
	for _, n := range g.nodes {
		if !n.isONNX() {
			return unsupported16("node %s: operator %s of domain %s", n.name, n.op, n.domain)
		}
		var out []int64
		switch {
		case n.op == "Cast":
			to, err := n.intAttr("to", 0)
			if err != nil {
				return fmt.Errorf("%w: %v", ErrNotONNX, err)
			}
			out = []int64{to}
		case n.op == "CastLike" && len(n.inputs) > 1:
			out = []int64{c.types[n.inputs[1]]}
		case n.op == "Where" && len(n.inputs) > 1:
			out = []int64{c.types[n.inputs[1]]}
		case n.op == "Constant":
			t, err := constType(n)
			if err != nil {
				return err
			}
			out = []int64{t}
		case n.op == "ConstantOfShape":
			out = []int64{dtypeFloat}
			if a, err := n.attr("value"); err == nil && a != nil {
				tb, _ := a.bytesField(attrT)
				t, err := parse(tb)
				if err != nil {
					return fmt.Errorf("%w: node %s: %v", ErrNotONNX, n.name, err)
				}
				dt, _ := t.varint(tensorDataType)
				out[0] = int64(dt)
			}
		case fixedTypes[n.op] != nil:
			out = fixedTypes[n.op]
		case sameType[n.op]:
			out = []int64{-1}
		}
		for i, o := range n.outputs {
			if o == "" {
				continue
			}
			t := int64(0)
			switch {
			case i < len(out):
				t = out[i]
			case sameType[n.op] && len(out) == 1:
				t = -1 // Split's outputs
			}
			if t == -1 && len(n.inputs) > 0 {
				t = c.types[n.inputs[0]]
			}
			if t <= 0 {
				t = hint[o]
			}
			if t == 0 {
				return unsupported16("node %s: the output type of operator %s is not known", n.name, n.op)
			}
			c.types[o] = t
		}
	}
	for name, t := range c.types {
		if t == dtypeFloat16 {
			return unsupported16("value %s is float16 already", name)
		}
	}
	return nil
}

// constType returns the element type of a Constant node's output.
func constType(n *node) (int64, error) {
	for _, b := range n.msg.messages(nodeAttr) {
		a, err := parse(b)
		if err != nil {
			return 0, fmt.Errorf("%w: node %s: %v", ErrNotONNX, n.name, err)
		}
		switch a.str(attrName) {
		case "value":
			tb, _ := a.bytesField(attrT)
			t, err := parse(tb)
			if err != nil {
				return 0, fmt.Errorf("%w: node %s: %v", ErrNotONNX, n.name, err)
			}
			dt, _ := t.varint(tensorDataType)
			return int64(dt), nil
		case "value_float", "value_floats":
			return dtypeFloat, nil
		case "value_int", "value_ints":
			return dtypeInt64, nil
		case "value_string", "value_strings":
			return 8, nil
		}
	}
	return 0, unsupported16("Constant %s: no value attribute this rewrite knows", n.name)
}

// rebuild encodes the converted graph: tensors in convert made float16, Casts inserted before
// the readers that need the other precision, float16 outputs cast back to float32.
func (c *fp16Conv) rebuild(convert map[string]bool) ([]byte, error) {
	g := c.g
	fresh := func(base string) string {
		name := base
		for k := 2; g.names[name]; k++ {
			name = base + strconv.Itoa(k)
		}
		g.names[name] = true
		return name
	}
	// Graph outputs computed in float16 get a Cast back: their producer writes NAME_fp16.
	rename := map[string]string{}
	var tail [][]byte
	for _, vb := range g.msg.messages(graphOutput) {
		name, _, _, _ := valueShape(vb)
		if c.now[name] == dtypeFloat16 {
			r := fresh(name + "_fp16")
			rename[name] = r
			c.now[r] = dtypeFloat16
			tail = append(tail, castNode(r, name, dtypeFloat))
			c.rep.Casts++
		}
	}
	casts := map[string]string{} // value + "→" + type → the cast's output
	var nodes [][]byte
	for _, n := range g.nodes {
		ins := make([]string, len(n.inputs))
		for i, in := range n.inputs {
			ins[i] = in
			if in == "" {
				continue
			}
			if r, ok := rename[in]; ok {
				in, ins[i] = r, r
			}
			have := c.now[in]
			if have == 0 {
				continue // not a float
			}
			want := c.want(n, i)
			if want == 0 || want == have {
				continue
			}
			key := in + "→" + strconv.FormatInt(want, 10)
			out, ok := casts[key]
			if !ok {
				suffix := "_fp16"
				if want == dtypeFloat {
					suffix = "_fp32"
				}
				out = fresh(in + suffix)
				casts[key] = out
				c.rep.Casts++
				if c.emulate && want == dtypeFloat16 {
					h := fresh(out + "_half")
					nodes = append(nodes, castNode(in, h, dtypeFloat16), castNode(h, out, dtypeFloat))
				} else {
					nodes = append(nodes, castNode(in, out, want))
				}
			}
			ins[i] = out
		}
		outs := make([]string, len(n.outputs))
		var round [][]byte // emulation: the Casts that round this node's float16 outputs
		for i, o := range n.outputs {
			outs[i] = o
			if r, ok := rename[o]; ok {
				outs[i] = r
			}
			if c.emulate && o != "" && c.now[outs[i]] == dtypeFloat16 {
				if n.op == "Cast" { // writes float16 itself
					h := fresh(outs[i] + "_half")
					round = append(round, castNode(h, outs[i], dtypeFloat))
					outs[i] = h
				} else {
					x, h := fresh(outs[i]+"_full"), fresh(outs[i]+"_half")
					round = append(round, castNode(x, h, dtypeFloat16), castNode(h, outs[i], dtypeFloat))
					outs[i] = x
				}
			}
		}
		msg, err := c.nodeMsg(n, ins, outs, convert)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, msg)
		nodes = append(nodes, round...)
	}
	nodes = append(nodes, tail...)

	var out message
	placed := false
	for _, f := range g.msg {
		switch f.num {
		case graphNode:
			if !placed {
				for _, nb := range nodes {
					out = append(out, bytesFieldOf(graphNode, nb))
				}
				placed = true
			}
			continue
		case graphValueInfo:
			continue
		case graphInput: // IR < 4 lists the initializers as inputs too
			if name, _, ok, _ := valueShape(f.val); ok && !c.emulate && (convert[name] || c.halfInput && name == g.input) {
				b, err := withElemType(f.val, dtypeFloat16)
				if err != nil {
					return nil, err
				}
				f.val = b
			}
		case graphInitializer:
			t, err := parse(f.val)
			if err != nil {
				return nil, err
			}
			if convert[t.str(tensorName)] {
				nt, err := c.halfTensor(t)
				if err != nil {
					return nil, err
				}
				f.val = nt
			}
		}
		out = append(out, f)
	}
	return out.marshal(), nil
}

// nodeMsg encodes node n with the given inputs and outputs; a float16 Cast to float becomes
// a Cast to float16, a converted Constant's tensor float16.
func (c *fp16Conv) nodeMsg(n *node, ins, outs []string, convert map[string]bool) ([]byte, error) {
	msg := make(message, 0, len(n.msg))
	ki, ko := 0, 0
	for _, f := range n.msg {
		switch {
		case f.num == nodeInput && f.typ == 2:
			f.val = []byte(ins[ki])
			ki++
		case f.num == nodeOutput && f.typ == 2:
			f.val = []byte(outs[ko])
			ko++
		case f.num == nodeAttr && f.typ == 2:
			a, err := parse(f.val)
			if err != nil {
				return nil, fmt.Errorf("%w: node %s: %v", ErrNotONNX, n.name, err)
			}
			switch name := a.str(attrName); {
			case n.op == "Cast" && name == "to" && len(n.outputs) > 0 && c.now[n.outputs[0]] == dtypeFloat16:
				f.val = message{bytesFieldOf(attrName, []byte("to")), varintField(attrI, dtypeFloat16),
					varintField(attrType, attrTypeInt)}.marshal()
			case n.op == "Constant" && name == "value" && len(n.outputs) > 0 && convert[n.outputs[0]]:
				tb, _ := a.bytesField(attrT)
				t, err := parse(tb)
				if err != nil {
					return nil, fmt.Errorf("%w: node %s: %v", ErrNotONNX, n.name, err)
				}
				nt, err := c.halfTensor(t)
				if err != nil {
					return nil, err
				}
				f.val = a.withBytes(attrT, nt).marshal()
			}
		}
		msg = append(msg, f)
	}
	return msg.marshal(), nil
}

// castNode encodes Cast(in) → out to element type to.
func castNode(in, out string, to int64) []byte {
	attr := message{bytesFieldOf(attrName, []byte("to")), varintField(attrI, uint64(to)), varintField(attrType, attrTypeInt)}
	return message{bytesFieldOf(nodeInput, []byte(in)), bytesFieldOf(nodeOutput, []byte(out)),
		bytesFieldOf(nodeName, []byte("vinfer_cast_"+out)), bytesFieldOf(nodeOpType, []byte("Cast")),
		bytesFieldOf(nodeAttr, attr.marshal())}.marshal()
}

// halfTensor returns the float TensorProto t as float16, in raw_data (emulating: rounded to
// float16, kept float32).
func (c *fp16Conv) halfTensor(t message) ([]byte, error) {
	name := t.str(tensorName)
	if loc, _ := t.varint(tensorLocation); loc != 0 {
		return nil, unsupported16("tensor %s holds external data", name)
	}
	v, err := tensorFloats(t)
	if err != nil {
		return nil, err
	}
	size, dt := 2, uint64(dtypeFloat16)
	if c.emulate {
		size, dt = 4, dtypeFloat
	}
	raw := make([]byte, size*len(v))
	for i, x := range v {
		h, clamped := Float16(x)
		if clamped {
			c.rep.Clamped++
		}
		if c.emulate {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(Float32(h)))
		} else {
			raw[2*i], raw[2*i+1] = byte(h), byte(h>>8)
		}
	}
	t = t.without(tensorFloat).without(tensorRaw).without(tensorDataType)
	return append(t, varintField(tensorDataType, dt), bytesFieldOf(tensorRaw, raw)).marshal(), nil
}

// tensorFloats returns the values of a float TensorProto held in the file.
func tensorFloats(t message) ([]float32, error) {
	name := t.str(tensorName)
	if raw, ok := t.bytesField(tensorRaw); ok {
		if len(raw)%4 != 0 {
			return nil, fmt.Errorf("%w: tensor %s: %d raw bytes, not a multiple of 4", ErrNotONNX, name, len(raw))
		}
		out := make([]float32, len(raw)/4)
		for i := range out {
			out[i] = f32le(raw[4*i:])
		}
		return out, nil
	}
	var out []float32
	for _, f := range t {
		if f.num != tensorFloat {
			continue
		}
		b := f.val
		if f.typ != 2 && f.typ != 5 { // packed, or one fixed32
			return nil, fmt.Errorf("%w: tensor %s: float_data of wire type %d", ErrNotONNX, name, f.typ)
		}
		if len(b)%4 != 0 {
			return nil, fmt.Errorf("%w: tensor %s: float_data of %d bytes", ErrNotONNX, name, len(b))
		}
		for i := 0; i < len(b); i += 4 {
			out = append(out, f32le(b[i:]))
		}
	}
	return out, nil
}
