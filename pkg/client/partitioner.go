package client

import "github.com/tierlog/tierlog/pkg/partitioner"

// KeyPartition is the partition the server (and Kafka's default
// partitioner) picks for a non-null key: toPositive(murmur2(key)) %
// partitions. The Producer routes with it so that it can keep one queue
// per partition.
func KeyPartition(key []byte, partitions int) int { return partitioner.ForKey(key, partitions) }
