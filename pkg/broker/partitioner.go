package broker

import "github.com/tierlog/tierlog/pkg/partitioner"

// KeyPartition is the partition Kafka's default partitioner picks for a
// non-null key (package partitioner).
func KeyPartition(key []byte, partitions int) int { return partitioner.ForKey(key, partitions) }
