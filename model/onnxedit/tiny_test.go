package onnxedit

import (
	"google.golang.org/protobuf/encoding/protowire"
)

// Builders of a tiny ONNX model for tests and fuzz seeds, with this package's own encoder.

func strField(num protowire.Number, s string) field { return bytesFieldOf(num, []byte(s)) }

func tNode(op, name string, ins, outs []string, attrs ...[]byte) []byte {
	var m message
	for _, i := range ins {
		m = append(m, strField(nodeInput, i))
	}
	for _, o := range outs {
		m = append(m, strField(nodeOutput, o))
	}
	m = append(m, strField(nodeName, name), strField(nodeOpType, op))
	for _, a := range attrs {
		m = append(m, bytesFieldOf(nodeAttr, a))
	}
	return m.marshal()
}

func tIntAttr(name string, v int64) []byte {
	return message{strField(attrName, name), varintField(attrI, uint64(v)), varintField(attrType, attrTypeInt)}.marshal()
}

func tInt64s(name string, v ...int64) []byte {
	return withInt64s(message{varintField(tensorDims, uint64(len(v))), varintField(tensorDataType, dtypeInt64),
		strField(tensorName, name)}, v).marshal()
}

// tValue encodes a float ValueInfoProto; a dim < 0 is the symbol "n".
func tValue(name string, dims ...int64) []byte {
	var sh message
	for _, d := range dims {
		var dm message
		if d < 0 {
			dm = message{strField(dimParam, "n")}
		} else {
			dm = message{varintField(dimValue, uint64(d))}
		}
		sh = append(sh, bytesFieldOf(shapeDim, dm.marshal()))
	}
	tt := message{varintField(ttElemType, dtypeFloat), bytesFieldOf(ttShape, sh.marshal())}
	tp := message{bytesFieldOf(typeTensor, tt.marshal())}
	return message{strField(valueName, name), bytesFieldOf(valueType, tp.marshal())}.marshal()
}

// tinyModel is a YOLOX-shaped toy: x [1,3,8,8] → Focus (8 Slices, Concat) → Sigmoid →
// Reshape [1,12,-1] (the shape from a Constant node when constNode, else an initializer) →
// Mul by a [1,12,16] initializer → y [1,12,16].
func tinyModel(constNode bool) []byte {
	var nodes, inits [][]byte
	big := int64(1) << 62
	inits = append(inits, tInt64s("s0", 0), tInt64s("s1", 1), tInt64s("end", big), tInt64s("ax2", 2),
		tInt64s("ax3", 3), tInt64s("st2", 2))
	offs := [4][2]string{{"s0", "s0"}, {"s1", "s0"}, {"s0", "s1"}, {"s1", "s1"}}
	var cat []string
	for k, o := range offs {
		a, b := "h"+string(rune('0'+k)), "w"+string(rune('0'+k))
		nodes = append(nodes,
			tNode("Slice", "slice_h"+a, []string{"x", o[0], "end", "ax2", "st2"}, []string{a}),
			tNode("Slice", "slice_w"+b, []string{a, o[1], "end", "ax3", "st2"}, []string{b}))
		cat = append(cat, b)
	}
	nodes = append(nodes, tNode("Concat", "cat", cat, []string{"c"}, tIntAttr("axis", 1)),
		tNode("Sigmoid", "sig", []string{"c"}, []string{"s"}))
	if constNode {
		val := message{strField(attrName, "value"), bytesFieldOf(attrT, tInt64s("", 1, 12, -1)),
			varintField(attrType, attrTypeTen)}.marshal()
		nodes = append(nodes, tNode("Constant", "shape_const", nil, []string{"shape"}, val))
	} else {
		inits = append(inits, tInt64s("shape", 1, 12, -1))
	}
	scale := make([]float32, 12*16)
	for i := range scale {
		scale[i] = float32(i%7) - 3
	}
	inits = append(inits, floatTensor("scale", []int64{1, 12, 16}, scale))
	nodes = append(nodes, tNode("Reshape", "reshape", []string{"s", "shape"}, []string{"r"}),
		tNode("Mul", "mul", []string{"r", "scale"}, []string{"y"}))
	var g message
	for _, n := range nodes {
		g = append(g, bytesFieldOf(graphNode, n))
	}
	g = append(g, strField(2, "tiny"))
	for _, t := range inits {
		g = append(g, bytesFieldOf(graphInitializer, t))
	}
	g = append(g, bytesFieldOf(graphInput, tValue("x", 1, 3, 8, 8)), bytesFieldOf(graphOutput, tValue("y", 1, 12, 16)),
		bytesFieldOf(graphValueInfo, tValue("c", 1, 12, 4, 4)))
	opset := message{strField(opsetDomain, ""), varintField(opsetVersion, 13)}
	return message{varintField(modelIRVersion, 7), strField(2, "vinfer-test"), bytesFieldOf(modelGraph, g.marshal()),
		bytesFieldOf(modelOpset, opset.marshal())}.marshal()
}
