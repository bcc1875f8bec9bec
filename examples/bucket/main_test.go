package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFlags(t *testing.T) {
	tests := []struct {
		args []string
		want int
	}{
		{args: []string{"--store-url", "ftp://x"}, want: 2},
		{args: []string{"--store-url", "http://127.0.0.1:1", "--workers", "0"}, want: 2},
		{args: []string{"--resync", "0s"}, want: 2},
		{args: []string{"--webhook-cert-secret", "certs"}, want: 2},
		{args: []string{"--webhook-cert-secret", "/certs"}, want: 2},
		{args: []string{"--default-region", "eu-west-1", "--regions", "us-east-1,ap-south-1"}, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.args[0]+" "+tt.args[1], func(t *testing.T) {
			assert.Equal(t, tt.want, run(tt.args, new(discard)))
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
