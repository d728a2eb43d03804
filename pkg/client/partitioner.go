package client

// KeyPartition is the partition the server (and Kafka's default
// partitioner) picks for a non-null key: toPositive(murmur2(key)) %
// partitions. The Producer routes with it so that it can keep one queue
// per partition; a test pins it to the server's.
func KeyPartition(key []byte, partitions int) int {
	return int(uint32(murmur2(key))&0x7fffffff) % partitions
}

// murmur2 is Kafka's hash for keys (org.apache.kafka.common.utils.Utils
// .murmur2): 32-bit MurmurHash2 with Kafka's seed, little-endian blocks.
func murmur2(data []byte) int32 {
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
