package event

import "hash/fnv"

// An ID made on a cluster node names the node: its random bits 79…64 (bytes 6–7) hold the
// node's tag, NodeTag(name), whose top bit is set; IDs made otherwise (and by earlier versions)
// keep that bit clear (Generator.draw), so a node's tag never reads from them. A GET of an
// evidence id on any node then goes to the one node with that tag (or the few sharing it: 15
// bits of FNV-1a), and an id whose tag no node has is answered without asking any.

// nodeBit marks bytes 6–7 as a node tag.
const nodeBit = 0x8000

// NodeTag is node name's tag: the top bit set and 15 bits of the name's FNV-1a hash.
func NodeTag(name string) uint16 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	s := h.Sum32()
	return nodeBit | uint16(s^s>>15)&0x7fff
}

// Node returns the tag of the node that made id; ok is false for an ID that names none.
func (id ID) Node() (tag uint16, ok bool) {
	t := uint16(id[6])<<8 | uint16(id[7])
	return t, t&nodeBit != 0
}

// SetNode makes g's IDs name node name (NodeTag); "" makes them name none again.
func (g *Generator) SetNode(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tag = 0
	if name == "" {
		g.primed = false // the next ID draws afresh
		return
	}
	g.tag = NodeTag(name)
	g.hi, g.lo = g.tag, g.lo>>1 // a tag is above any untagged hi: IDs still increase
}

// SetNode makes the process-wide generator's IDs (NewID) name cluster node name; a process
// is one node.
func SetNode(name string) { defaultGenerator.SetNode(name) }
