package main

import (
	"testing"
	"time"
)

// TestParseTimestamp: milliseconds, RFC 3339 and -DURATION ago (kcat's
// relative times, s2's --ago).
func TestParseTimestamp(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	for in, want := range map[string]int64{
		"1764500000000":        1764500000000,
		"2026-01-02T15:04:05Z": time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC).UnixMilli(),
		"-1h":                  1_800_000_000_000 - 3_600_000,
		"-90s":                 1_800_000_000_000 - 90_000,
		"-0s":                  1_800_000_000_000,
	} {
		if got, err := parseTimestampAt(in, now); err != nil || got != want {
			t.Errorf("parseTimestampAt(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"-5", "yesterday", "-1fortnight", "--1h", ""} {
		if got, err := parseTimestampAt(in, now); err == nil {
			t.Errorf("parseTimestampAt(%q) = %d, want an error", in, got)
		}
	}
}
