package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

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
	in, err := readRegular(fs.Arg(0), maxModelBytes)
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

// maxModelBytes bounds a model file read whole: 2 GiB, the protobuf message limit.
const maxModelBytes = 2 << 30

// readRegular reads the file at path (symbolic links resolved) whole if it is a regular file
// of at most max bytes; a device, FIFO, directory or larger file is an error naming path.
func readRegular(path string, max int64) ([]byte, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, fi.Mode().Type())
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d a model may have", path, fi.Size(), max)
	}
	f, err := os.Open(real)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Replaced between the two looks: the open file is checked again, the read bounded anyway.
	if fi, err = f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: more than the %d bytes a model may have", path, max)
	}
	return b, nil
}
