// Package partitioner is Kafka's default partitioner for keyed records, so
// a key lands on the partition a Kafka client would pick. The broker routes
// with it, and so does the client's producer, which keeps one queue per
// partition. It imports nothing of tierlog.
package partitioner

// ForKey is the partition Kafka's default partitioner picks for a non-null
// key: toPositive(murmur2(key)) % partitions.
func ForKey(key []byte, partitions int) int {
	return int(uint32(Murmur2(key))&0x7fffffff) % partitions
}

// Murmur2 is Kafka's hash for keys (org.apache.kafka.common.utils.Utils
// .murmur2): 32-bit MurmurHash2 with Kafka's seed, little-endian blocks.
func Murmur2(data []byte) int32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	n := len(data)
	h := seed ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[n&^3:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}
