package onnxedit

import (
	"encoding/binary"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of onnx/onnx.proto (IR version 3 to 10) that this package reads or writes.
const (
	modelIRVersion = 1
	modelGraph     = 7
	modelOpset     = 8
	modelFunctions = 25

	opsetDomain  = 1
	opsetVersion = 2

	graphNode        = 1
	graphInitializer = 5
	graphInput       = 11
	graphOutput      = 12
	graphValueInfo   = 13
	graphSparseInit  = 15

	nodeInput  = 1
	nodeOutput = 2
	nodeName   = 3
	nodeOpType = 4
	nodeAttr   = 5
	nodeDomain = 7

	attrName    = 1
	attrI       = 3
	attrT       = 5
	attrG       = 6
	attrInts    = 8
	attrGraphs  = 11
	attrType    = 20
	attrTypeInt = 2 // AttributeProto.INT
	attrTypeTen = 4 // AttributeProto.TENSOR
	attrTypeGr  = 5 // AttributeProto.GRAPH
	attrTypeGrs = 10
	attrTypeIs  = 7 // AttributeProto.INTS

	tensorDims     = 1
	tensorDataType = 2
	tensorInt32    = 5
	tensorInt64    = 7
	tensorName     = 8
	tensorRaw      = 9
	tensorLocation = 14

	dtypeFloat = 1
	dtypeInt32 = 6
	dtypeInt64 = 7

	valueName = 1
	valueType = 2

	typeTensor = 1
	ttElemType = 1
	ttShape    = 2
	shapeDim   = 1
	dimValue   = 1
	dimParam   = 2
)

// node is a parsed NodeProto.
type node struct {
	msg     message
	inputs  []string
	outputs []string
	name    string
	op      string
	domain  string
}

func parseNode(b []byte) (*node, error) {
	m, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	n := &node{msg: m, inputs: m.strs(nodeInput), outputs: m.strs(nodeOutput), name: m.str(nodeName),
		op: m.str(nodeOpType), domain: m.str(nodeDomain)}
	if n.name == "" && len(n.outputs) > 0 {
		n.name = n.op + "→" + n.outputs[0]
	}
	return n, nil
}

// isONNX reports whether the node's operator is from the default domain.
func (n *node) isONNX() bool { return n.domain == "" || n.domain == "ai.onnx" }

// attr returns the node's attribute called name, parsed.
func (n *node) attr(name string) (message, error) {
	for _, b := range n.msg.messages(nodeAttr) {
		a, err := parse(b)
		if err != nil {
			return nil, fmt.Errorf("node %s: attribute: %w", n.name, err)
		}
		if a.str(attrName) == name {
			return a, nil
		}
	}
	return nil, nil
}

// intAttr returns an INT attribute, def when absent.
func (n *node) intAttr(name string, def int64) (int64, error) {
	a, err := n.attr(name)
	if err != nil || a == nil {
		return def, err
	}
	v, ok := a.varint(attrI)
	if !ok {
		return 0, fmt.Errorf("node %s: attribute %s is not an int", n.name, name)
	}
	return int64(v), nil
}

// hasSubgraph reports whether any attribute holds a graph (If, Loop, Scan bodies).
func (n *node) hasSubgraph() (bool, error) {
	for _, b := range n.msg.messages(nodeAttr) {
		a, err := parse(b)
		if err != nil {
			return false, fmt.Errorf("node %s: attribute: %w", n.name, err)
		}
		t, _ := a.varint(attrType)
		_, g := a.bytesField(attrG)
		_, gs := a.bytesField(attrGraphs)
		if g || gs || t == attrTypeGr || t == attrTypeGrs {
			return true, nil
		}
	}
	return false, nil
}

// tensorInts returns the values of an int32 or int64 TensorProto held in the file.
func tensorInts(t message) ([]int64, error) {
	if loc, _ := t.varint(tensorLocation); loc != 0 {
		return nil, fmt.Errorf("tensor %s holds external data", t.str(tensorName))
	}
	dt, _ := t.varint(tensorDataType)
	raw, hasRaw := t.bytesField(tensorRaw)
	switch dt {
	case dtypeInt64:
		if hasRaw {
			if len(raw)%8 != 0 {
				return nil, fmt.Errorf("tensor %s: %d raw bytes, not a multiple of 8", t.str(tensorName), len(raw))
			}
			return le64(raw), nil
		}
		return t.ints(tensorInt64)
	case dtypeInt32:
		if hasRaw {
			if len(raw)%4 != 0 {
				return nil, fmt.Errorf("tensor %s: %d raw bytes, not a multiple of 4", t.str(tensorName), len(raw))
			}
			out := make([]int64, len(raw)/4)
			for i := range out {
				out[i] = int64(int32(binary.LittleEndian.Uint32(raw[4*i:])))
			}
			return out, nil
		}
		v, err := t.ints(tensorInt32)
		for i := range v {
			v[i] = int64(int32(v[i]))
		}
		return v, err
	}
	return nil, fmt.Errorf("tensor %s has data type %d, want int32 or int64", t.str(tensorName), dt)
}

// withInt64s returns the int64 TensorProto t with its values replaced by v (same count), stored
// as raw_data.
func withInt64s(t message, v []int64) message {
	raw := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(raw[8*i:], uint64(x))
	}
	return t.without(tensorInt64).without(tensorInt32).withBytes(tensorRaw, raw)
}

// floatTensor encodes a float32 TensorProto with raw_data.
func floatTensor(name string, dims []int64, v []float32) []byte {
	raw := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
	}
	var m message
	for _, d := range dims {
		m = append(m, varintField(tensorDims, uint64(d)))
	}
	m = append(m, varintField(tensorDataType, dtypeFloat), bytesFieldOf(tensorName, []byte(name)), bytesFieldOf(tensorRaw, raw))
	return m.marshal()
}

// intsAttr encodes an INTS AttributeProto.
func intsAttr(name string, v []int64) []byte {
	m := message{bytesFieldOf(attrName, []byte(name))}
	for _, x := range v {
		m = append(m, varintField(attrInts, uint64(x)))
	}
	m = append(m, varintField(attrType, attrTypeIs))
	return m.marshal()
}

// shape is a value's tensor shape: per dim its value (-1 when symbolic or unknown) and symbol.
type shape struct {
	elem int64 // TensorProto.DataType
	dims []int64
	syms []string
}

// valueShape reads a ValueInfoProto's name and tensor shape; ok is false for a value that is
// not a tensor or has no shape.
func valueShape(b []byte) (name string, s shape, ok bool, err error) {
	v, err := parse(b)
	if err != nil {
		return "", s, false, err
	}
	name = v.str(valueName)
	tb, has := v.bytesField(valueType)
	if !has {
		return name, s, false, nil
	}
	tp, err := parse(tb)
	if err != nil {
		return name, s, false, err
	}
	ttb, has := tp.bytesField(typeTensor)
	if !has {
		return name, s, false, nil
	}
	tt, err := parse(ttb)
	if err != nil {
		return name, s, false, err
	}
	et, _ := tt.varint(ttElemType)
	s.elem = int64(et)
	sb, has := tt.bytesField(ttShape)
	if !has {
		return name, s, false, nil
	}
	sm, err := parse(sb)
	if err != nil {
		return name, s, false, err
	}
	for _, db := range sm.messages(shapeDim) {
		d, err := parse(db)
		if err != nil {
			return name, s, false, err
		}
		if v, ok := d.varint(dimValue); ok {
			s.dims, s.syms = append(s.dims, int64(v)), append(s.syms, "")
		} else {
			s.dims, s.syms = append(s.dims, -1), append(s.syms, d.str(dimParam))
		}
	}
	return name, s, true, nil
}

// tensorTypeOf parses the ValueInfoProto b down to its TypeProto and TypeProto.Tensor.
func tensorTypeOf(b []byte) (v, tp, tt message, err error) {
	if v, err = parse(b); err != nil {
		return nil, nil, nil, err
	}
	tb, _ := v.bytesField(valueType)
	if tp, err = parse(tb); err != nil {
		return nil, nil, nil, err
	}
	ttb, _ := tp.bytesField(typeTensor)
	if tt, err = parse(ttb); err != nil {
		return nil, nil, nil, err
	}
	return v, tp, tt, nil
}

// withBatchDim returns the ValueInfoProto b with its first dimension made the symbol sym.
// The caller checked with valueShape that the path exists.
func withBatchDim(b []byte, sym string) ([]byte, error) {
	v, tp, tt, err := tensorTypeOf(b)
	if err != nil {
		return nil, err
	}
	sb, _ := tt.bytesField(ttShape)
	sm, err := parse(sb)
	if err != nil {
		return nil, err
	}
	for i := range sm {
		if sm[i].num == shapeDim && sm[i].typ == protowire.BytesType {
			d, err := parse(sm[i].val)
			if err != nil {
				return nil, err
			}
			d = d.without(dimValue).without(dimParam)
			d = append(message{bytesFieldOf(dimParam, []byte(sym))}, d...)
			sm[i].val = d.marshal()
			break
		}
	}
	tt = tt.withBytes(ttShape, sm.marshal())
	tp = tp.withBytes(typeTensor, tt.marshal())
	v = v.withBytes(valueType, tp.marshal())
	return v.marshal(), nil
}

// withElemType returns the tensor ValueInfoProto b with its element type made elem. The caller
// checked with valueShape that it is a tensor.
func withElemType(b []byte, elem int64) ([]byte, error) {
	v, tp, tt, err := tensorTypeOf(b)
	if err != nil {
		return nil, err
	}
	tt = append(message{varintField(ttElemType, uint64(elem))}, tt.without(ttElemType)...)
	tp = tp.withBytes(typeTensor, tt.marshal())
	return v.withBytes(valueType, tp.marshal()).marshal(), nil
}
