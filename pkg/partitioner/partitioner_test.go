package partitioner

import "testing"

// Vectors from Kafka's UtilsTest.testMurmur2: a key lands on the partition a
// Kafka client would pick only if these match.
func TestMurmur2KafkaVectors(t *testing.T) {
	cases := []struct {
		key  []byte
		want int32
	}{
		{[]byte("21"), -973932308},
		{[]byte("foobar"), -790332482},
		{[]byte("a-little-bit-long-string"), -985981536},
		{[]byte("a-little-bit-longer-string"), -1486304829},
		{[]byte("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"), -58897971},
		{[]byte{'a', 'b', 'c'}, 479470107},
	}
	for _, c := range cases {
		if got := Murmur2(c.key); got != c.want {
			t.Errorf("Murmur2(%q) = %d, want %d", c.key, got, c.want)
		}
	}
}

func TestForKey(t *testing.T) {
	// toPositive(-973932308) = 1173551340; % 4 = 0, % 7 = 1173551340 % 7.
	h := int32(-973932308)
	for _, n := range []int{1, 3, 4, 7, 100} {
		want := int(uint32(h)&0x7fffffff) % n
		if got := ForKey([]byte("21"), n); got != want {
			t.Errorf("ForKey(21, %d) = %d, want %d", n, got, want)
		}
	}
	if got := ForKey([]byte{}, 10); got != int(uint32(Murmur2(nil))&0x7fffffff)%10 {
		t.Errorf("empty key: %d", got)
	}
}
