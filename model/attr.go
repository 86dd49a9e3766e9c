package model

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/vinfer/vinfer/attr"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/preprocess"
)

// attrPreprocess is the default preprocessing of each attribute kind, for the fields a model
// config leaves unset: PaddleOCR's recognizer (RGB, height kept, padded right, (x/255−0.5)/0.5),
// OpenVINO's re-identification models (BGR 0…255, plain resize), and 0…1 RGB for classifiers.
var attrPreprocess = map[attr.Kind]preprocess.Spec{
	attr.KindOCR: {Color: preprocess.RGB, Resize: preprocess.Letterbox, Align: preprocess.TopLeft, Pad: 128,
		Scale: 1.0 / 255, Mean: [3]float32{0.5, 0.5, 0.5}, Std: [3]float32{0.5, 0.5, 0.5}},
	attr.KindEmbedding: {Color: preprocess.BGR, Resize: preprocess.Stretch, Scale: 1, Std: [3]float32{1, 1, 1}},
	attr.KindClassify:  {Color: preprocess.RGB, Resize: preprocess.Stretch, Scale: 1.0 / 255, Std: [3]float32{1, 1, 1}},
}

// configureAttr sets up a model of an attribute kind (ocr, embedding, classify) for a w×h
// input: preprocessing, labels (the OCR dictionary) and a decoder check. The input must be a
// 3-channel image and the outputs fit the kind (attr.New), else the error names the shapes.
func (m *Model) configureAttr(c config.Model, w, h int) error {
	in := m.sess.Inputs()[0]
	ch := in.Shape[1]
	if m.sess.NHWC() {
		ch = in.Shape[3]
	}
	if ch != 3 {
		return fmt.Errorf("%w: a %s model takes a 3-channel image, this one's input is %s %v", attr.ErrShape, c.Kind, in.Name, in.Shape)
	}
	m.Kind, m.NHWC = c.Kind, m.sess.NHWC()
	m.Pre = attrPreprocess[c.Kind]
	m.Pre.Width, m.Pre.Height = w, h
	c.Preprocess.Apply(&m.Pre)
	if err := m.Pre.Validate(); err != nil {
		return err
	}
	var labels []string
	if c.Kind != attr.KindEmbedding {
		if c.Labels == "" {
			return fmt.Errorf("a %s model needs labels: (its dictionary or class names, one a line)", c.Kind)
		}
		var err error
		if c.Kind == attr.KindOCR {
			labels, err = readDictionary(c.Labels)
		} else {
			labels, err = detect.LoadLabels(c.Labels)
		}
		if err != nil {
			return err
		}
	}
	if _, err := attr.New(c.Kind, m.sess.Outputs(), labels); err != nil {
		return err
	}
	m.Post = detect.Params{Labels: labels, LabelsFile: c.Labels, InputWidth: w, InputHeight: h}
	return nil
}

// NewAttr returns the attribute decoder of a model of an attribute kind (one per worker); nil
// for a detector.
func (m *Model) NewAttr() (attr.Decoder, error) {
	if m.Kind == attr.KindDetect {
		return nil, nil
	}
	return attr.New(m.Kind, m.sess.Outputs(), m.Post.Labels)
}

// maxDictionary bounds an OCR dictionary file (bytes).
const maxDictionary = 1 << 20

// readDictionary reads an OCR dictionary: one symbol a line, lines kept as they are (a line
// holding a space is the space symbol), only the line ends removed.
func readDictionary(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ocr dictionary: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxDictionary+1))
	if err != nil {
		return nil, fmt.Errorf("ocr dictionary %s: %w", path, err)
	}
	if len(b) > maxDictionary {
		return nil, fmt.Errorf("ocr dictionary %s is over %d bytes", path, maxDictionary)
	}
	s := strings.TrimSuffix(strings.TrimPrefix(string(b), "\ufeff"), "\n")
	if s == "" {
		return nil, fmt.Errorf("ocr dictionary %s is empty: want one symbol a line", path)
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines, nil
}
