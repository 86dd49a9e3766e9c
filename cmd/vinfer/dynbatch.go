package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/vinfer/vinfer/model"
)

// dynamicBatchCmd writes the dynamic-batch copy of a batch-1 model that `vinfer run` makes at
// load (model.DynamicBatch), for tools that open models without vinfer's loader.
func dynamicBatchCmd(args []string) error {
	fs := flag.NewFlagSet("dynamic-batch", flag.ContinueOnError)
	threads := fs.Int("threads", 1, "ONNX Runtime intra-op threads for the check")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: vinfer dynamic-batch [--threads N] IN.onnx OUT.onnx")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return errors.New("dynamic-batch needs IN.onnx and OUT.onnx")
	}
	in, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return err
	}
	out, rep, err := model.DynamicBatch(in, model.ClampThreads(*threads))
	if err != nil {
		return fmt.Errorf("%s: %w", fs.Arg(0), err)
	}
	if err := os.WriteFile(fs.Arg(1), out, 0o644); err != nil {
		return err
	}
	fmt.Printf("%s: %s (checked at batch 2 against the original)\n", fs.Arg(1), rep)
	return nil
}
