package config

import "testing"

// TestRecordSampleConfig: configs/record.yaml (docs/recording.md, "Try it") loads, its stream
// recorded, with evidence, the API on loopback and no token written in the file.
func TestRecordSampleConfig(t *testing.T) {
	c, err := Load("../configs/record.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Record == nil || c.Evidence == nil || len(c.Streams) != 1 || !c.Streams[0].Record ||
		c.Output.HTTP != "127.0.0.1:8080" || c.Output.Token != "" {
		t.Fatalf("%+v", c)
	}
}
