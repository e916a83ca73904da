package store

import (
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4/y"
	"github.com/klauspost/compress/zstd"
)

// copyOptions asks for zstd level 3, badgerOptions for Badger's default
// (1). Badger keeps one zstd encoder for the process, made at the level
// of the first table it compresses: a daemon flushes a memtable before it
// compacts, and every later compaction gets that level.
func TestReviewCompactionZSTDLevel(t *testing.T) {
	words := strings.Fields("the go test run build make git commit push pull status diff log main src internal pkg cmd " +
		"file path read write edit grep find sed awk echo cat ls cd mkdir rm cp mv chmod export env func return")
	x := uint64(1)
	var sb strings.Builder
	for sb.Len() < 2<<20 {
		x = x*6364136223846793005 + 1442695040888963407
		sb.WriteString(words[(x>>33)%uint64(len(words))] + " ")
	}
	block := []byte(sb.String())
	// The store's first table compressed (a memtable flushed, with
	// badgerOptions), then a compaction's (copyOptions).
	first := badgerOptions(t.TempDir(), Options{}).ZSTDCompressionLevel
	copied := copyOptions(t.TempDir(), Options{}).ZSTDCompressionLevel
	y.ZSTDCompress(nil, block[:64<<10], first)
	got, _ := y.ZSTDCompress(nil, block, copied)
	want := zstdAt(t, block, copied)
	t.Logf("level %d asked: %d bytes; level %d gives %d", copied, len(got), copied, want)
	if first != copied && len(got) != want {
		t.Errorf("a compaction asks for zstd level %d, gets level %d's (%d bytes, not %d): Badger's encoder is the process's, made at the level of the first table", copied, first, len(got), want)
	}
}

// zstdAt is the size of b compressed at level by an encoder of its own.
func zstdAt(t *testing.T, b []byte, level int) int {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)))
	if err != nil {
		t.Fatal(err)
	}
	return len(e.EncodeAll(b, nil))
}
