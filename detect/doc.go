// Package detect turns object-detection model outputs into boxes: one decoder per model family
// (output layout), greedy non-maximum suppression, and class names.
//
// # Families
//
//	yolox       [N,A,5+C], A = Σ_s ⌈H/s⌉·⌈W/s⌉ for s = 8,16,32: raw grid offsets and log sizes,
//	            objectness, class probabilities (Megvii YOLOX export, demo_postprocess)
//	fastestdet  [N,5+C,H/16,W/16]: objectness, tanh offsets, sigmoid sizes as fractions of the
//	            input, softmaxed classes; score = obj^0.6·cls^0.4 (dog-qiuqiu/FastestDet)
//	ultraface   scores [N,P,1+C] (softmax, column 0 background) and corner boxes [N,P,4]
//	            normalised to the input (Linzaer/Ultra-Light-Fast-Generic-Face-Detector-1MB)
//	yolov5      [N,3A,5+C] of cx,cy,w,h in input pixels, objectness, class probabilities
//	            (Ultralytics export), or the three raw Detect heads [N,3(5+C),H/s,W/s] /
//	            [N,3,H/s,W/s,5+C] decoded here with anchors
//	yolov8      [N,4+C,A]: cx,cy,w,h in input pixels then class scores, anchors along the last
//	            axis (Ultralytics YOLOv8 and YOLO11 export)
//	nanodet     NanoDet-Plus [N,A,C+4(R+1)] (strides 8…64, centres x·s) or legacy NanoDet
//	            cls_pred_stride_s [N,A_s,C] + dis_pred_stride_s [N,A_s,4(R+1)] (centres (x+½)·s)
//	end2end     [N,K,6]: x1,y1,x2,y2 in input pixels, score, class, NMS done in the graph
//	            (Ultralytics YOLOv10 / YOLO26 end2end export, YOLOv8 nms=True); no NMS here
//	picodet     per level of stride s scores [N,A_s,C] and distributions [N,A_s,4(R+1)], paired
//	            by cell count (PaddleDetection PP-PicoDet without post-processing, GFL heads;
//	            centres (x+½)·s)
//
// Each family is one Kind in its own file (its layout, published preprocessing and defaults,
// decoder and auto-detection), listed in the registry table in family.go; README.md says how
// to add one. DetectFamily recognises each layout from the session's input and output shapes
// where that is unambiguous; NewDecoder checks a layout against the declared outputs before
// the first frame.
//
// # Coordinates
//
// Decoders work in model-input pixels, run NMS there (IoU is unchanged by the per-axis scaling
// back to the source), then map each kept box to source-frame pixels with the
// preprocess.Transform of the frame, which undoes letterbox or stretch and clamps to the frame.
//
// # Cost
//
// A Decoder keeps its scratch space and appends to the caller's slice: once that slice has
// grown to the largest candidate count seen, Decode allocates nothing. A Decoder is used by
// one goroutine at a time. Class scans start from the score threshold, so the rows that hold
// nothing (nearly all) cost one predictable comparison per value.
//
// Costs per family (go test -bench . ./detect) are in docs/benchmarks.md.
package detect
