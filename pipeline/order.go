package pipeline

// Result order. Each stream's items are numbered as the scheduler pops them (item.seq); a
// model's GPU lanes finish batches out of that order, so the output stage puts each stream's
// results back in it before the scene analyzer (tracker) and the sinks see them. Items that
// gave no result (failed inference) arrive as resultMsg without r and only advance the order.
// Only the output goroutine touches a stream's outNext and outHeld.

// inOrder calls out for msg and for the results of msg's stream it released, in the stream's
// order; a result ahead of its turn is held back.
func inOrder(msg resultMsg, out func(resultMsg)) {
	st := msg.st
	if msg.seq != st.outNext {
		st.outHeld = append(st.outHeld, msg)
		return
	}
	for {
		st.outNext++
		if msg.r != nil {
			out(msg)
		}
		i := heldAt(st.outHeld, st.outNext)
		if i < 0 {
			return
		}
		msg = st.outHeld[i]
		last := len(st.outHeld) - 1
		st.outHeld[i] = st.outHeld[last]
		st.outHeld[last] = resultMsg{}
		st.outHeld = st.outHeld[:last]
	}
}

// heldAt returns the index of the held result numbered seq, or −1.
func heldAt(held []resultMsg, seq uint64) int {
	for i := range held {
		if held[i].seq == seq {
			return i
		}
	}
	return -1
}
