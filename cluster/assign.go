package cluster

import (
	"hash/fnv"
	"math"
	"sort"
)

// Member is a live node as the assignment sees it.
type Member struct {
	Name string
	// Weight is the node's capacity relative to the others (> 0).
	Weight float64
	// Max caps the streams assigned to the node; 0: no cap.
	Max int
}

// score is the weighted rendezvous (highest random weight) score of stream id on node: w/−ln(u)
// with u uniform in (0,1) from a hash of both names. The node with the highest score wins; a
// node's share of the streams is proportional to its weight, and adding or removing a node
// moves only the streams it wins or held (Schindelhauer and Schomaker, "Weighted distributed
// hash tables", 2005).
func score(node, id string, weight float64) float64 {
	h := fnv.New64a()
	h.Write([]byte(node))
	h.Write([]byte{0})
	h.Write([]byte(id))
	x := mix(h.Sum64())
	u := (float64(x>>11) + 0.5) / (1 << 53) // (0,1)
	return weight / -math.Log(u)
}

// mix is splitmix64's finalizer: FNV's low bits are poorly spread for similar names.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Assign places each stream on a member: the highest-scoring member with room. Streams are
// placed in id order, so every node computing it from the same members and streams gets the
// same answer. A stream no member has room for is absent from the result (pending).
func Assign(ids []string, members []Member) map[string]string {
	return AssignExcept(ids, members, nil)
}

// AssignExcept is Assign where stream id is never placed on a member with skip(id, member)
// true (a nil skip skips none).
func AssignExcept(ids []string, members []Member, skip func(id, node string) bool) map[string]string {
	out := make(map[string]string, len(ids))
	if len(members) == 0 {
		return out
	}
	sorted := append([]string(nil), ids...)
	sort.Strings(sorted)
	load := make(map[string]int, len(members))
	type cand struct {
		name string
		s    float64
	}
	cands := make([]cand, len(members))
	for _, id := range sorted {
		for i, m := range members {
			w := m.Weight
			if w <= 0 {
				w = 1
			}
			cands[i] = cand{m.Name, score(m.Name, id, w)}
		}
		sort.Slice(cands, func(a, b int) bool {
			if cands[a].s != cands[b].s {
				return cands[a].s > cands[b].s
			}
			return cands[a].name < cands[b].name
		})
		for _, c := range cands {
			if skip != nil && skip(id, c.name) {
				continue
			}
			if mx := maxOf(members, c.name); mx > 0 && load[c.name] >= mx {
				continue
			}
			out[id] = c.name
			load[c.name]++
			break
		}
	}
	return out
}

func maxOf(members []Member, name string) int {
	for _, m := range members {
		if m.Name == name {
			return m.Max
		}
	}
	return 0
}
