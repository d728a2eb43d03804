package partition

import (
	"path/filepath"
	"strconv"

	"github.com/tierlog/tierlog/pkg/meta"
)

// TopicDir is where a topic's partitions live under the hot tier root:
// <root>/<topic>~<topic id> (meta.IncarnationName: a long name is cut to fit
// NAME_MAX). The id makes a re-created topic start clean.
func TopicDir(root, topic, topicID string) string {
	return filepath.Join(root, meta.IncarnationName(topic, topicID))
}

// Dir is partition k's directory under the hot tier root.
func Dir(root string, k meta.PartitionKey) string {
	return filepath.Join(TopicDir(root, k.Topic, k.TopicID), strconv.Itoa(k.Partition))
}
