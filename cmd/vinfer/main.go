// Command vinfer is a video-AI inference server: it decodes video streams (files, RTSP, RTP,
// GB28181), runs ONNX detection models on the frames with cross-stream batching, and emits
// detections as JSON Lines (and over HTTP with `--http`).
//
//	vinfer run [--config FILE]                 the main job (default: the bundled sample)
//	vinfer detect --model M.onnx --input PATH  detections for one image or video, JSON Lines
//	vinfer dynamic-batch IN.onnx OUT.onnx      the dynamic-batch copy of a batch-1 model
//	vinfer fp16 IN.onnx OUT.onnx               the float16 rewrite of a model
//	vinfer send FILE rtp://|rtsp://|gb28181://...  stream a file as a live camera would
//	vinfer version
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runCmd(os.Args[2:])
	case "detect":
		err = detectCmd(os.Args[2:])
	case "track":
		err = trackCmd(os.Args[2:])
	case "dynamic-batch":
		err = dynamicBatchCmd(os.Args[2:])
	case "fp16":
		err = fp16Cmd(os.Args[2:])
	case "version":
		err = versionCmd()
	case "healthcheck":
		err = healthcheckCmd(os.Args[2:])
	case "send":
		err = sendCmd(os.Args[2:])
	case "-h", "--help", "help":
		usage()
		return
	default:
		fmt.Fprintf(os.Stderr, "vinfer: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "vinfer: %v\n", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  vinfer run [--config FILE] [--http ADDR]   run streams (default: the bundled sample clip with YOLOX-Nano)
  vinfer detect --model MODEL.onnx --input IMAGE|VIDEO   print detections as JSON Lines
  vinfer track --detections DET.txt --format mot [--gt GT.txt]   track detections offline (MOTChallenge), score against ground truth
  vinfer dynamic-batch IN.onnx OUT.onnx      write the dynamic-batch copy of a batch-1 model (what run does at load)
  vinfer fp16 IN.onnx OUT.onnx               write the float16 rewrite run makes for precision: fp16 (unchecked)
  vinfer version                             print versions
  vinfer healthcheck [--url URL]             exit 0 when a running vinfer's /healthz answers 200 (container HEALTHCHECK)
  vinfer send [--serve] [--once] FILE URL    stream a video file, looping, in real time to rtp://, rtsp:// or gb28181:// (a test camera)
Run 'vinfer COMMAND -h' for a command's flags.
`)
}
