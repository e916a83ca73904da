# toolgate's everyday recipes. `just --list` shows them.

# the whole test suite, as CI runs it
test *flags:
    ./scripts/test {{flags}}

# formatting, vet and staticcheck
lint:
    test -z "$(gofmt -l .)" || (gofmt -l . && exit 1)
    go vet ./...
    go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

# benchmarks, each beside its floor measured in the same run, as one table
bench:
    ./scripts/bench

# run a fuzz target for a while, e.g. `just fuzz ./policy FuzzCommand 10m`
fuzz pkg target time="1m":
    go test {{pkg}} -run '^$' -fuzz '^{{target}}$' -fuzztime {{time}}

# build toolgate's programs and toolgate-bash.so into ./bin, the programs
# statically (a dynamically linked hook costs about 1 ms more on every tool
# call)
build:
    scripts/build bin
