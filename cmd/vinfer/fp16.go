package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/vinfer/vinfer/model"
	"github.com/vinfer/vinfer/model/onnxedit"
)

// fp16Cmd writes the float16 rewrite `vinfer run` makes at load for precision: fp16 (of the
// dynamic-batch copy for a batch-1 model), for tools that open models without vinfer's loader.
// The rewrite is not checked here: run checks it against float32 on the provider it serves on.
func fp16Cmd(args []string) error {
	fs := flag.NewFlagSet("fp16", flag.ContinueOnError)
	threads := fs.Int("threads", 1, "ONNX Runtime intra-op threads for the dynamic-batch check")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: vinfer fp16 [--threads N] IN.onnx OUT.onnx")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return errors.New("fp16 needs IN.onnx and OUT.onnx")
	}
	in, err := readRegular(fs.Arg(0), maxModelBytes)
	if err != nil {
		return err
	}
	src := in
	if dyn, _, err := model.DynamicBatch(in, model.ClampThreads(*threads)); err == nil {
		src = dyn
	}
	out, rep, err := onnxedit.FP16(src, onnxedit.FP16Options{})
	if err != nil {
		return fmt.Errorf("%s: %w", fs.Arg(0), err)
	}
	if err := os.WriteFile(fs.Arg(1), out, 0o644); err != nil {
		return err
	}
	fmt.Printf("%s: %s\n", fs.Arg(1), rep)
	return nil
}
