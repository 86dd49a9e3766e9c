package attr

// Value is one attribute of a detection: what a second-stage model read on its crop.
type Value struct {
	// Model is the second-stage model's name.
	Model string
	Kind  Kind
	// As is the name under which a track votes over its reads (a cascade's as: plate); empty:
	// not voted.
	As string
	// Text is an OCR read (ocr).
	Text string
	// Label and ClassID are the best class (classify).
	Label   string
	ClassID int
	// Score is the confidence, 0…1: the mean probability of the read's characters (ocr), the
	// best class's probability (classify), 1 for an embedding.
	Score float32
	// Vector is the L2-normalised embedding (embedding); its memory is reused by the Value's
	// owner.
	Vector []float32
}

// Reset empties v, keeping Vector's capacity.
func (v *Value) Reset() {
	*v = Value{Vector: v.Vector[:0]}
}
