// Package attr decodes the outputs of second-stage models run on crops of detections (package
// pipeline's cascades) into attributes of the parent detection, by the model's kind:
//
//   - ocr: a CTC text recognizer, output [N,T,C] (T time steps, C = blank + dictionary
//     [+ space]), decoded greedily (best class per step, repeats merged, blanks dropped) into
//     text and a confidence, the mean probability of the kept steps (PaddleOCR's convention).
//   - embedding: an appearance vector, output [N,D] (or [N,D,1,1]), L2-normalised so that two
//     vectors compare by their dot product (cosine similarity).
//   - classify: one label of K, output [N,K], softmax applied unless the rows already sum to 1.
//
// A model whose input or output does not fit its kind is refused when its decoder is made,
// with the shapes in the message; so is an OCR dictionary whose size does not match the
// model's classes.
package attr
