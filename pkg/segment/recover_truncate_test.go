package segment

import (
	"fmt"
	"os"
	"testing"
)

// Recovering a segment whose files already have their committed lengths
// (a clean release) truncates nothing: on NFS each truncate is a durable
// round trip. One with bytes past the committed length is cut back.
func TestRecoverTruncatesOnlyWhatIsLonger(t *testing.T) {
	dir := t.TempDir()
	var c FSCounters
	opts := Options{FS: CountingFS(OSFS{}, &c), IndexIntervalBytes: 64}
	id := ID{Base: 0, Epoch: 1}
	w, err := Create(dir, id, opts)
	if err != nil {
		t.Fatal(err)
	}
	var recs []Record
	for i := range 20 {
		recs = append(recs, Record{Offset: int64(i), Timestamp: 1, Value: fmt.Appendf(nil, "value %02d", i)})
	}
	if err := w.Append(recs); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	st := w.State()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	before := c.Calls(FSTruncate)
	got, err := Recover(dir, id, st.Size, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got.Size != st.Size || got.NextOffset != 20 {
		t.Fatalf("recovered %+v, want size %d next 20", got, st.Size)
	}
	if n := c.Calls(FSTruncate) - before; n != 0 {
		t.Errorf("recovery at the committed length made %d truncates, want 0", n)
	}

	// Bytes past the committed length (an aborted attempt): cut.
	f, err := os.OpenFile(id.Path(dir, KindLog), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("aborted attempt")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	before = c.Calls(FSTruncate)
	if _, err := Recover(dir, id, st.Size, opts); err != nil {
		t.Fatal(err)
	}
	if n := c.Calls(FSTruncate) - before; n != 1 {
		t.Errorf("recovery past an aborted attempt made %d truncates, want 1 (the log)", n)
	}
	fi, err := os.Stat(id.Path(dir, KindLog))
	if err != nil || fi.Size() != st.Size {
		t.Fatalf("log after recovery: %v, %v; want size %d", fi, err, st.Size)
	}
}
