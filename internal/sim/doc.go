// Package sim is the deterministic simulation of the write path
// (docs/internals.md "Simulation"): one process runs writers, zombies,
// readers, brokers, compactors and an admin of one topic of 1-3 partitions
// over a simulated NFS file system, a simulated DynamoDB and a simulated
// S3, driven by one seeded scheduler and one fake clock, and checks the
// invariants after every step. It drives the real code: partition.Open,
// (*partition.Log) Append, Read, OffsetForTime and Close; broker.New,
// ProducePartition, Fetch, OffsetForTime and DeleteTopic; compactor passes.
// Each simulated process or Lambda container has its own NFS client,
// metadata connection and object store client.
//
// # Scheduler
//
// Each actor runs in its own goroutine, but every call into the simulated
// file system or metadata store is a yield point: the goroutine blocks until
// the scheduler (math/rand/v2, PCG seeded by the seed) picks it, and only
// one goroutine runs at a time. A seed therefore reproduces a run exactly
// (TestDeterministic checks it, and a failing seed is re-run with tracing,
// which must fail the same way). A step is one pick: an actor runs one
// operation (and the code up to its next yield), or the scheduler injects
// an event. The virtual clock advances 0-10 ms per step and jumps by about
// a lease TTL now and then; each actor reads it with its own skew (up to
// ±200 ms, or ±3 s in a quarter of the seeds: more than a lease TTL).
//
// Actors:
//   - every writer (and broker) is a client that sends each batch in one
//     of four modes (batches.go; Config.Modes, -sim.modes): plain (no
//     key, at-least-once: a retry after a 503 has its own values, so the
//     duplicates an unknown outcome allows are other values, checked by
//     I1-I6 only), keyed (a key unique to the batch and a hash of its
//     records; every retry, after any error but a definite refusal, and
//     after a crash of the writer's process, resends the same key and
//     records), conditional (keyed, with Expected = the high watermark
//     the client last saw; a mismatch is final) and reuse (the key of an
//     acknowledged batch with other records: must be refused with
//     ErrKeyReused). Retries back off 20-800 ms of virtual time, for up
//     to RetryFor (5 s). Each batch goes to a random partition;
//   - server writers: HoldLease, keep the lease between batches (the local
//     server, or aws with ReleaseEachBatch=false);
//   - Lambda writers: acquire and release per batch (or park the lease
//     when alone); a container is replaced now and then (a new owner, a
//     new NFS client). In half of the seeds (Config.Detach) they run with
//     partition.Config.Detach: the work a lone round hands to it (the
//     checkpoint) runs after the append returned, before the actor's next
//     command, behind the yield point opDetached, where the actor may
//     crash or freeze (Config.AtDetached; TestSimulateLone);
//   - zombies: any writer the scheduler pauses inside an operation for
//     more than the lease TTL, then resumes: its late pwrite, fsync and
//     commit run against a world that moved on; a quarter of the pauses
//     are freezes of 10-60 lease TTLs (a Lambda container frozen with a
//     round in flight, thawed by a later invocation);
//   - readers: fetch containers that Read from random offsets (and ask
//     OffsetForTime) through their own warm Log, and read offsets below the
//     hot start from the cold tier (catalog entry, then pkg/tier); a third
//     of the reads (readers' and brokers') are a consumer's: one of three
//     per partition, reading at the high watermark it was last told by
//     whichever process answered it, as a consumer's fetches land on any
//     warm container;
//   - compactors: pkg/compactor passes (finalize to pkg/objstore/mem,
//     retention when the topic has retention_bytes, hot and cold cleanup)
//     over every partition of the topic as read from the store, in a
//     random order, each pass on a new NFS client, passes of two
//     compactors overlapping;
//   - brokers (brokers.go): pkg/broker processes, HoldLease or
//     ReleaseEachBatch, that produce with ProducePartition and read with
//     Fetch and OffsetForTime, whose cold-tier path (catalog, pkg/tier,
//     cache on or off per seed) races compactor passes;
//   - the admin (churn seeds, one in four): now and then deletes the topic
//     with Broker.DeleteTopic and creates it again under the next id
//     (id1, id2...: a random id would make runs differ) while brokers keep
//     the old incarnation cached; a crash mid-delete leaves it to the
//     restarted admin, which deletes again. Churn is off in TestSimulate
//     while the bug it finds is open (open_test.go).
//   - topic updates (a third of the seeds, by the same admin): now and
//     then one more partition (up to four), another segment size or
//     segment age, through Broker.UpdateTopic, while brokers send some
//     keyed records on the topic route (Broker.ProduceWith: the broker
//     picks the partition by the key); a record of a keyed batch found in
//     two partitions is I7 broken.
//
// Both kinds of writers append batches of 1-4 records with unique values
// ("<actor>/b<batch>/r<i>/xxx"), so every byte a reader gets can be traced
// to the append that wrote it. A batch that waits for a busy partition
// (staged in the write buffer) waits through partition.Config.Sleep, a
// yield point in virtual time (opSleep: a scenario can stop a waiter
// there); Rand is the seeded source, and BusyWait is chosen per seed
// (300 ms, 2 s or the default).
//
// # File system (nfs.go)
//
// A Server holds the durable contents and the only namespace; each Client
// (one per process) has:
//   - a page cache: pwrite stays in the client until fsync, close or
//     background writeback (a scheduler event that sends some of a client's
//     unsynced writes to the server without an fsync, as memory pressure
//     does);
//   - close-to-open consistency: open revalidates and takes the server's
//     contents; an open file keeps reading what it saw at open (plus its
//     own writes), not other clients' later writes;
//   - a name cache with positive and negative entries and a listing cache,
//     trusted for FSFaults.AttrTimeout (1.5 s of virtual time): a cached
//     listing misses files other clients created since; a listing read
//     from the server misses each file another client created within the
//     timeout with rate StaleList (the write buffer's trap,
//     docs/internals.md "Many writers: the write buffer": a leader may not
//     see a staged batch); a stat of a name this client looked up before
//     answers "absent" from its fresh negative entry, and an open does with
//     rate NegativeHit; a quarter of the seeds trust names and listings for
//     30 s and another quarter for 60 s (EFS's acdirmin and acregmax), far
//     beyond the busy wait;
//   - file times (mtime) from the server's clock, which no actor's skew
//     touches;
//   - no O_APPEND: writes are at explicit positions only.
//
// Faults (FSFaults, per call, chosen by the seed): fsync (or close) fails
// with EIO and drops the client's unsynced pages, some of which may have
// reached the server; a background writeback fails silently (its pages
// are dropped, marked clean) and the next fsync or close of the file
// reports EIO, once (Linux after a failed writeback); pwrite fails (EIO, ENOSPC) or is short; an exclusive
// create fails, or is applied but its reply is lost; an open through a
// cached name of a file another client removed answers ESTALE, as do
// reads and writes of a handle whose file another client removed; a
// remove is applied but answers EIO. A crash (scheduler event) loses the
// client's unsynced pages and unwinds the actor's goroutine at its yield
// point: the process runs no further code, then starts again as a new
// process.
//
// Damage (damage.go, a scheduler event): bit rot at the server, in a
// committed segment file not yet tiered (sealed or active): a byte of a
// record flips, or the file loses its tail. The model marks the records
// whose bytes changed (decoded from the bytes before, past the committed
// length too; between two damages of one file, everything between, as
// pkg/segment's resync rule allows): they may be refused (a
// *partition.DamagedError, ErrCorrupt), never served as anything but what
// was acknowledged; every other record must stay readable, and writes go
// on.
//
// # Object store (tiering.go)
//
// pkg/objstore/mem behind ObjFaults, per call: a put refused; a put
// applied whose answer is lost; a get or head that fails (a 5xx, which the
// broker cannot map to 503: objstore has no such error); a slow call (the
// actor waits 50-1500 ms of virtual time for the answer, the request done:
// a yield point where a pass, a retention or a takeover runs). A get right
// after a delete answers not found (as S3 does).
//
// # Metadata store (metastore.go)
//
// The reference store (pkg/meta/mem) behind a network that, per write
// (MetaFaults): refuses it (not applied, ErrUnavailable); loses the answer
// (applied, ErrUnavailable); delays it (ErrUnavailable now, the request
// lands later, after other actors' requests, or is lost); duplicates it
// (applied and answered, and a retried copy lands again later); throttles
// it (the caller waits 50 ms to 1.5 lease TTLs while the SDK retries, then
// the request applies or, half the time, is refused). A share
// (LongDelay) of delayed requests is held 3-6 lease TTLs: a late commit
// lands after a takeover and the new owner's commits. Reads may fail. A
// late or duplicated commit landing after newer ones must never apply. The
// store wrapper also tells the model which incarnation each
// actor's last answered commit and last partition read were of, and which
// incarnation a topic delete request was meant for.
//
// # Invariants (world.go)
//
// The model keeps every acknowledged record (offset -> value, timestamp,
// from Append's result), what any reader ever saw, and every value ever
// attempted. After every step:
//   - I1: the committed high watermark never goes back, no offset is
//     acknowledged twice, reads return dense offsets from where they
//     started, a value sits at one offset only;
//   - I2: no acknowledged offset is past the committed high watermark; the
//     records acknowledged since the last check and a random sample are
//     read back through a fresh Log on a fresh NFS client, which sees only
//     durable server state and the committed item, and must hold exactly
//     the acknowledged bytes;
//   - I3: a reader never gets an offset at or past the committed high
//     watermark, nor a value nobody appended, and what was read at N is
//     what every later read of N gets (reader or checker); no read is
//     answered out of range for an offset committed when it started (a
//     checkpoint behind the item is no excuse); a consumer that was told a
//     high watermark by one process and reads below it through another
//     gets records, once partition.CheckpointStaleness (and the skew)
//     has passed since it was told;
//   - I4: no two commits applied from the same (epoch, commit version)
//     (checked in the store wrapper);
//   - I5: follows from I2 and I3: committed bytes never change;
//   - I6: timestamps non-decreasing, on an append-time topic; OffsetForTime
//     answers the first offset at or after the time, on both kinds (a third
//     of the seeds run a create-time topic, whose records mostly carry a
//     producer timestamp behind the clock: every read must return it, and
//     no record before an answer may be at or after the time). In half of
//     the seeds records carry headers, derived from their values, which
//     every read checks; so is each record's key (half of them carry their
//     writer's name, and say so in the value);
//   - I7 at most once, incrementally: after every step the offsets
//     committed since the last step are read through a fresh Log (durable
//     state only) and each value's offset is kept: a value at two offsets
//     is a batch committed twice; a keyed batch's records must be one
//     contiguous run;
//   - I8 answered truthfully: a success (Replayed or not) names where its
//     records are (checked whichever comes first, the answer or the
//     scan); Replayed on a key's first attempt, or for a plain batch, or
//     for a key reused with other records is a lie; a batch refused on
//     its only attempt (MismatchError, ErrKeyReused) must never appear;
//     ErrKeyReused for a key only ever sent with the same records is a
//     violation; a MismatchError names the batch's Expected, a high
//     watermark other than it and not past the committed one; a broker's
//     per-record offsets are one run;
//   - conditional appends: a keyed batch with Expected E is answered at E
//     and, if its records are in the log at all, they start at E (also
//     when another leader took it from the write buffer).
//
// Further checks (each also a scenario where it can be scripted):
//   - topic delete: an acknowledged write is readable under the topic name:
//     a commit into an incarnation answered after its topic item was
//     deleted is a violation, and so is a fetch serving records of an
//     incarnation read after that; a topic delete request deletes the
//     incarnation it was sent for and no other;
//   - retention: whenever the log start moved, the segments from it on
//     (catalog and item, each offset range once) hold at least
//     retention_bytes;
//   - reads racing tiering: Broker.Fetch answers records, out of range or
//     unavailable, never another error (damage aside); Broker.OffsetForTime
//     is checked at once against a brute force over the model (every
//     acknowledged or read record committed when it started and above the
//     log start when it ended): it never skips a segment;
//   - fetch progress: a Broker.Fetch below the high watermark that answers 200
//     answers at least one record;
//   - tiering: when the run ends, two compactor passes with no faults
//     tier every sealed segment above the log start whose file is not
//     damaged.
//
// Every FullCheckEvery steps, when the faults stop and at the end, the
// whole log is read back and checked. Liveness: after Steps steps the
// faults stop (in-flight requests land or are lost, paused actors resume),
// and some append must succeed within Liveness of virtual time.
//
// A violation stops the run. TestSimulate then runs the seed again with
// tracing and prints the violation, the last 200 events (step, virtual
// time, actor, operation with its arguments and result) and the command
// that runs the seed again.
//
// # Running
//
//	go test ./internal/sim -run 'TestSimulate$'                  # 2,000 seeds (CI)
//	go test ./internal/sim -run 'TestSimulate$' -sim.seeds 20000 -sim.first 5000
//	go test ./internal/sim -run 'TestSimulate$' -sim.seed 1234 -v   # one seed, its trace
//	go test ./internal/sim -run 'TestSimulate$' -sim.seed 1234 -sim.traceall -v
//	make simulate SEEDS=100000                                      # many seeds, no -race
//
// -sim.steps (or SIM_STEPS) sets the steps with faults per seed; SIM_SEEDS
// the number of seeds. Seeds run in parallel over GOMAXPROCS.
//
// openFaults (open_test.go) lists faults TestSimulate leaves out while a
// bug they trigger is open, each with its reason, printed in the test log;
// delete a line when its bug is fixed.
//
// # Scenarios
//
// scenarios_test.go holds scripted regressions: a Script names which actor
// runs, what it does and where it stops (AppendUntil(z, n, pad, opWrite,
// ".log") freezes z just before its pwrite), which operation of which
// actor fails (Fail), when time passes (Advance), when a duplicated commit
// lands (DuplicateNextCommit, Deliver), and checks every step like a
// random run. To add one, write a func(*Script) and add it to the
// scenarios table; mark it open: "<reason>" while the bug is not fixed
// (the test logs it, and fails once it passes, so the mark gets removed).
// Batches in scripts are plain unless the script says AppendKeyed;
// Retries turns retries on (scripts have none by default) and sets the
// busy wait; LoseNextAnswer loses the answer of a's next metadata write.
// Scripts do not depend on the scheduler's random choices, so they keep
// meaning the same interleaving as the code under test changes.
//
// # Older checkouts
//
// compat.go holds what depends on the metadata contract (commit versions,
// partition fencing, cold marks; partition.DamagedError, item fencing). To
// run the simulation against the checkout compat_ba945fc.go.txt is for:
//
//	git worktree add --detach /tmp/simold ba945fc
//	mkdir -p /tmp/simold/internal/sim && cp internal/sim/*.go /tmp/simold/internal/sim/
//	rm /tmp/simold/internal/sim/compactor.go   # no compactor over segment.FS there
//	cp internal/sim/compat_ba945fc.go.txt /tmp/simold/internal/sim/compat.go
//	(cd /tmp/simold && go test ./internal/sim -run TestScenarios -v)
//	rm -rf /efs   # ba945fc's broker makes its directories with os.MkdirAll
//
// There no compactor runs (it reads the hot tier through package os), so
// the retention, reads-racing-tiering, fetch-progress and tiering checks
// cannot fail there; random runs stop at the first damaged record (that
// checkout has no resync: ErrCorrupt for everything after it).
package sim
