package timestamp

import (
	"testing"
	"time"
)

func TestNTPRoundTrip(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(2013, 4, 15, 11, 15, 17, 958404853, time.UTC),
		time.Date(2026, 11, 30, 23, 59, 59, 999999999, time.UTC),
		time.Unix(0, 0),
	} {
		if got := NTPTime(NTP(tm)); !got.Equal(tm) {
			t.Errorf("NTPTime(NTP(%v)) = %v", tm, got)
		}
	}
	// RFC 5905 §6: 2^32 fraction units are one second.
	if got := NTPTime((ntpEpochOffset+1)<<32 | 1<<31); !got.Equal(time.Unix(1, 500_000_000)) {
		t.Errorf("half a second after 1970-01-01T00:00:01: got %v", got)
	}
}

func TestWallclock(t *testing.T) {
	w := Wallclock{Rate: 90000}
	if _, ok := w.At(0); ok {
		t.Fatal("At before any sender report reported ok")
	}
	sr := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	w.Update(NTP(sr), 0xFFFFFF00) // just before the RTP timestamp wraps
	for _, tc := range []struct {
		ts   uint32
		want time.Time
	}{
		{0xFFFFFF00, sr},
		{90000 - 0x100, sr.Add(time.Second)},           // wrapped
		{0xFFFFFF00 - 45000, sr.Add(-time.Second / 2)}, // before the report
	} {
		got, ok := w.At(tc.ts)
		if !ok || !got.Equal(tc.want) {
			t.Errorf("At(%#x) = %v %v, want %v", tc.ts, got, ok, tc.want)
		}
	}
	if w.Reports() != 1 {
		t.Errorf("Reports() = %d", w.Reports())
	}
	w.Reset()
	if _, ok := w.At(0); ok {
		t.Fatal("At after Reset reported ok")
	}
}
