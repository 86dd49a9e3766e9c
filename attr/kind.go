package attr

import (
	"fmt"
	"strings"
)

// Kind is what a model's output means: detections (the default, package detect) or an
// attribute of a crop.
type Kind string

// Model kinds.
const (
	KindDetect    Kind = "" // boxes, decoded by package detect's families
	KindOCR       Kind = "ocr"
	KindEmbedding Kind = "embedding"
	KindClassify  Kind = "classify"
)

// Kinds lists the attribute kinds.
var Kinds = []Kind{KindOCR, KindEmbedding, KindClassify}

// ParseKind returns the kind named s ("detect" or empty for detections), in any case.
func ParseKind(s string) (Kind, error) {
	switch w := Kind(strings.ToLower(strings.TrimSpace(s))); w {
	case "", "detect":
		return KindDetect, nil
	case KindOCR, KindEmbedding, KindClassify:
		return w, nil
	}
	return "", fmt.Errorf("attr: unknown model kind %q: use detect, ocr, embedding or classify", s)
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseKind.
func (k *Kind) UnmarshalText(b []byte) error {
	v, err := ParseKind(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// String is the kind's configuration word ("detect" for KindDetect).
func (k Kind) String() string {
	if k == KindDetect {
		return "detect"
	}
	return string(k)
}
