package pipeline

// TornDown returns a channel closed once stream id has been torn down after it ended or was
// removed: its queued frames inferred, its latest frame released, its decoder (and so its frame
// pool) and source closed. RemoveStream returns before that; ask before removing. Nil for an
// unknown id.
func (p *Pipeline) TornDown(id string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st, ok := p.streams[id]; ok {
		return st.torn
	}
	return nil
}
