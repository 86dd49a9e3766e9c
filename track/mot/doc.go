// Package mot reads MOTChallenge files and scores tracker output against ground truth the way
// the MOTChallenge devkit does (Milan et al., "MOT16: A Benchmark for Multi-Object Tracking",
// arXiv:1603.00831): a tracker box and a ground-truth box match when their IoU is at least 0.5;
// CLEAR MOT (Bernardin and Stiefelhagen, 2008) with a per-frame assignment that keeps the
// previous frame's matches while they still hold; IDF1 by a global one-to-one matching of
// ground-truth and tracker trajectories (Ristani et al., "Performance Measures and a Data Set for
// Multi-Target, Multi-Camera Tracking", ECCV 2016 workshops).
package mot
