package analytics

// ZoneCount is one zone's figures for one class: the gauge vinfer_zone_objects and the counter
// vinfer_zone_events_total by type.
type ZoneCount struct {
	Zone  string `json:"zone"`
	Class string `json:"class"`
	// Objects is the number of tracks in the zone now (tracks briefly lost inside still count).
	Objects int64 `json:"objects"`
	// Enter, Leave and Loiter count zone.enter, zone.leave and zone.loiter events.
	Enter  uint64 `json:"enter"`
	Leave  uint64 `json:"leave"`
	Loiter uint64 `json:"loiter"`
}

// LineCount is one line's figures for one class: the counter vinfer_line_crossings_total by
// direction.
type LineCount struct {
	Line  string `json:"line"`
	Class string `json:"class"`
	In    uint64 `json:"in"`
	Out   uint64 `json:"out"`
}

// Metrics is a snapshot of an Analyzer's gauges and counters, one row per zone or line and
// class seen since the zone or line was declared, in declaration then first-seen order.
// Counters restart at 0 when a zone or line is changed.
type Metrics struct {
	Zones []ZoneCount `json:"zones"`
	Lines []LineCount `json:"lines"`
}

// Metrics fills m (reusing its slices) with the current figures.
func (a *Analyzer) Metrics(m *Metrics) {
	a.mu.Lock()
	defer a.mu.Unlock()
	m.Zones, m.Lines = m.Zones[:0], m.Lines[:0]
	for z := range a.zones {
		c := &a.zones[z].counts
		for i, cl := range c.classes {
			t := c.totals[i]
			m.Zones = append(m.Zones, ZoneCount{Zone: a.cur.zones[z].src.Name, Class: cl, Objects: c.objects[i], Enter: t[0], Leave: t[1], Loiter: t[2]})
		}
	}
	for l := range a.lines {
		c := &a.lines[l].counts
		for i, cl := range c.classes {
			m.Lines = append(m.Lines, LineCount{Line: a.cur.lines[l].src.Name, Class: cl, In: c.totals[i][0], Out: c.totals[i][1]})
		}
	}
}

// Occupancy returns the number of tracks in zone now, of class (a label) or of all classes
// when class is "", and false when no such zone is applied.
func (a *Analyzer) Occupancy(zone, class string) (int64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for z := range a.zones {
		if a.cur.zones[z].src.Name != zone {
			continue
		}
		var n int64
		c := &a.zones[z].counts
		for i, cl := range c.classes {
			if class == "" || cl == class {
				n += c.objects[i]
			}
		}
		return n, true
	}
	return 0, false
}
