// Package rediskv keeps an lshdb index on a Redis Cluster (or one Redis
// server): the storage a second backend of package db will run over (issue
// 16). It holds what db's Pebble store holds — the manifest, one record
// per document, the id map and one posting list per band bucket — in a
// layout a cluster can shard, and writes in an order that readers
// tolerate, since a cluster has no transaction across slots.
//
// # Key layout
//
// Every key starts with "lshdb:NAME:" (NAME from the URL's path, default
// "default"). Keys hash to slots by their whole name (no hash tags), so
// documents and buckets spread over the masters; only the counters share
// a slot, in one hash.
//
//	lshdb:NAME:manifest             string: the manifest (db's codec)
//	{lshdb:NAME:manifest:N}:copy    string: a copy of the manifest, two of them, on other masters (manifestCopyKey)
//	{lshdb:NAME}:counters           hash: next (the last doc number given), live (documents stored)
//	lshdb:NAME:i:ID                 string: the doc number of ID (decimal)
//	lshdb:NAME:d:N                  hash: i (the id), r (the record), b (its band buckets, 8 bytes each), x (set when deleted)
//	lshdb:NAME:p:BAND:BUCKET        set: the doc numbers (decimal) in a band bucket (BUCKET hex)
//	lshdb:NAME:x                    sorted set: the expiring documents, "N:BUCKETS" (hex) by expiry (Unix ms)
//
// # Expiry
//
// A document put with an expiry has its record and its id expire with
// Redis's own key expiry (PEXPIREAT), and is listed in the expiry set with
// its buckets, which outlive the record: Sweep removes the postings (and
// whatever Redis has not yet expired) of the documents that are due.
// Readers check the expiry in the record too (db's compaction.Expired),
// so nothing is returned after it, swept or not.
//
// # Write order
//
// A put writes the document's record (and its buckets) first, then its
// postings, then its id and its expiry entry, then retires the document it replaces: marks its
// record deleted, removes its postings, deletes the record. A delete does
// the last step alone, after removing the id. A reader skips a posting
// whose record is missing or marked deleted (it reads the record to verify
// the candidate anyway), so a crash between the steps never shows a
// half-written document: at worst an orphan record or postings that point
// at nothing, which Repair removes. Documents written in one Apply are
// visible together only if it completes; there is no snapshot: a query
// reads the cluster as it is (Pebble's snapshot is the one thing a
// cluster cannot give).
//
// # Round trips
//
// go-redis's cluster pipeline sends each node its commands in one round
// trip, to all nodes at once: a query reads its b buckets in one round
// trip per master holding any of them (three on a 3-master cluster), and
// its candidates' records in another; Apply pipelines each of its steps,
// thousands of commands per round trip per node.
package rediskv

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

// ErrURL is returned by Open and ParseURL for a URL that is not
// redis://HOST:PORT[/NAME] or redis+cluster://HOST:PORT,HOST:PORT…[/NAME].
//
// NB: its words name the URL, not its scheme: a URL of a bad index name or
// of the wrong kind of server was "not a redis:// or redis+cluster://
// URL" (an operator's review of Redis, RD8).
var ErrURL = errors.New("not a usable Redis index URL")

// Store is an index's storage on Redis. Its methods are safe for
// concurrent use.
type Store struct {
	// Unreplicated, if set before use, is called by Sync with the address
	// of each master that holds slots but has no replica (after a
	// failover, until a replica is added; on a single server, none
	// connected) or whose replicas are all being synced anew: its writes
	// are acknowledged without one. A master whose listed replica is cut
	// off is not one: its writes fail with ErrNotReplicated.
	Unreplicated func(master string)
	// evicting are the servers whose maxmemory-policy evicts (Evicting).
	evicting []Eviction

	// noWait holds, by master address, until when Sync takes the master
	// for one that acknowledges alone without asking (a time.Time): one
	// with no replica connected, or whose replicas are being synced anew.
	// A WAIT on it would wait its whole timeout.
	noWait sync.Map
	// cutOff holds, by master address, until when Sync fails a write to
	// the master without waiting, and why (a cutOff): the cluster lists
	// a replica of it that did not acknowledge the last write (its link
	// down, or stalled): every write waited the whole timeout before it
	// failed.
	cutOff sync.Map
	// asked is Sync's first question to a server of its own (redis://):
	// whether it has a replica.
	asked sync.Once

	c      redis.UniversalClient
	prefix string
	// freeAtOOM says every master runs Redis 7.0 or later, whose scripts
	// can be flagged allow-oom: a delete's mark and its counter's
	// decrement then run at maxmemory, and the delete frees memory (on
	// 6.2 they are refused, as every write there).
	freeAtOOM bool
	// pipelines counts the pipelines sent to nodes (round trips), for
	// benchmarks and tests.
	pipelines atomic.Int64
	// mark is the counters' mark of the index this handle writes to
	// (MarkCounters), "" until it is set.
	mark string

	// finished holds what this handle's writes that are over (Finished)
	// kept for a write sent again, for the next write to delete.
	finishedMu sync.Mutex
	finished   finishedKeys
}

// finishedKeys are the keys that writes that are over kept: their count
// marks (countedKey), which the next write's count deletes, and their
// swaps keys (swapsKey), which its end deletes.
type finishedKeys struct{ marks, swaps []string }

// ErrCountersGone is a put's error when the index's counters no longer
// hold the mark its handle saw at open (MarkCounters): Redis lost them
// (a restart without persistence, an eviction), or the index was
// dropped, maybe made again. Nothing of the put was written.
var ErrCountersGone = errors.New("rediskv: the index's counters are gone from Redis, or are another index's")

// ErrCountersLost is a write's error when the index's numbers were
// reused: the counters gave a document number that a record holds, or an
// id named a record of another id. Redis lost writes (a restart without
// persistence, a failover that lost a master's last writes), the
// counters' among them, and a write that went on would overwrite or
// retire another id's document.
var ErrCountersLost = errors.New("rediskv: the index's document numbers went back (Redis lost writes)")

// ErrForeignValue is the error of a key under the index's prefix whose
// value lshdb did not write (not a number where one is, a record key
// that names none): a key of another program's, or one set by hand.
var ErrForeignValue = errors.New("rediskv: a key of the index holds a value lshdb did not write")

// ParseURL returns the nodes, whether they form a cluster, and the index
// name of a redis:// or redis+cluster:// URL.
func ParseURL(s string) (addrs []string, cluster bool, name string, err error) {
	c, err := parseURL(s)
	return c.addrs, c.cluster, c.name, err
}

// urlConfig is what an index URL says.
type urlConfig struct {
	addrs              []string
	cluster            bool
	name               string
	username, password string
}

// Redact returns s with the password of its user information, if any,
// replaced by "xxxxx", for messages. A URL that does not parse (a
// password with a bare %, space, # or /) has everything between its
// scheme's "://" and its last "@" after the user name replaced: the
// password is never shown.
func Redact(s string) string {
	u, err := url.Parse(s)
	if err == nil && u.User != nil {
		if _, ok := u.User.Password(); !ok {
			return s
		}
		return u.Redacted()
	}
	if err == nil {
		// NB: a string that parses with no host may still hold user
		// information: redis:/user:pw@host (one slash, a typo) is a path
		// (a fuzz campaign's F2). What lies between the user name's ":"
		// and the last "@" goes. One with a host has none: an "@" in its
		// path is the path's (a read-through's R3).
		colon := strings.Index(s, ":")
		at := strings.LastIndex(s, "@")
		if u.Host != "" || colon < 0 || at < colon {
			return s
		}
		pw := strings.Index(s[colon+1:at], ":")
		if pw < 0 {
			return s
		}
		return s[:colon+1+pw+1] + "xxxxx" + s[at:]
	}
	scheme, rest, ok := strings.Cut(s, "://")
	at := strings.LastIndex(rest, "@")
	if !ok || at < 0 {
		return s
	}
	user, _, _ := strings.Cut(rest[:at], ":")
	return scheme + "://" + user + ":xxxxx" + rest[at:]
}

// PasswordEnv is the environment variable whose value is the password
// of a URL that has none (a user name alone, or no user information).
const PasswordEnv = "LSHDB_REDIS_PASSWORD"

func parseURL(s string) (urlConfig, error) {
	var c urlConfig
	u, err := url.Parse(s)
	if err != nil {
		// NB: url.Parse's error quotes the whole URL, password included.
		why := "it does not parse as a URL"
		var ue *url.Error
		if errors.As(err, &ue) {
			why += " (" + Redact(ue.Err.Error()) + ")"
		}
		if strings.Contains(s, "@") {
			why = "it does not parse as a URL (in a password, write % as %25, @ as %40, / as %2F, # as %23, a space as %20)"
		}
		return c, fmt.Errorf("%w: %q: %s", ErrURL, Redact(s), why)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		// NB: "…/x?y" would name the index x, and "…/x#y" too.
		return c, fmt.Errorf("%w: %q: a query (?…) or fragment (#…) is not part of an index URL", ErrURL, Redact(s))
	}
	if u.User != nil {
		c.username = u.User.Username()
		c.password, _ = u.User.Password()
	}
	if _, has := u.User.Password(); !has {
		// NB: a URL on a command line is every local user's to read
		// (ps): the password could be given in it alone (an operator's
		// review of Redis, RD6). Taken here, not written into the URL, so
		// that messages show the URL as given.
		c.password = os.Getenv(PasswordEnv)
	}
	addrs, cluster, name, err := hostsAndName(s, u)
	c.addrs, c.cluster, c.name = addrs, cluster, name
	return c, err
}

func hostsAndName(s string, u *url.URL) (addrs []string, cluster bool, name string, err error) {
	s = Redact(s)
	switch u.Scheme {
	case "redis":
	case "redis+cluster":
		cluster = true
	default:
		return nil, false, "", fmt.Errorf("%w: %q: its scheme is not redis:// or redis+cluster://", ErrURL, s)
	}
	for _, a := range strings.Split(u.Host, ",") {
		if a = strings.TrimSpace(a); a != "" {
			if !strings.Contains(a, ":") {
				a += ":6379"
			}
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 || !cluster && len(addrs) > 1 {
		return nil, false, "", fmt.Errorf("%w: %q: give one HOST:PORT (redis://) or several (redis+cluster://)", ErrURL, s)
	}
	name = strings.Trim(u.Path, "/")
	if name == "" {
		name = "default"
	}
	// NB: the name is part of the SCAN patterns that find the index's
	// keys (lshdb:NAME:*): a glob character in it would match the keys
	// of other names (v[12] those of v1 and v2), which Drop would delete.
	if strings.ContainsAny(name, "{}:/ *?[]\\") {
		return nil, false, "", fmt.Errorf("%w: %q: the index name %q holds one of {}:/*?[]\\ or a space", ErrURL, s, name)
	}
	return addrs, cluster, name, nil
}

// Open connects to the index named by url (see ParseURL) and checks that
// the nodes answer.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	cfg, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	var c redis.UniversalClient
	if cfg.cluster {
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: cfg.addrs, Username: cfg.username, Password: cfg.password})
	} else {
		c = redis.NewClient(&redis.Options{Addr: cfg.addrs[0], Username: cfg.username, Password: cfg.password})
	}
	s := &Store{c: c, prefix: "lshdb:" + cfg.name + ":"}
	if cc, ok := c.(*redis.ClusterClient); ok {
		// NB: a hook on the cluster client sees one pipeline per
		// Pipelined call; the nodes' clients see the round trips.
		// NB: go-redis v9.23 reloads the slot map on a MOVED reply but not
		// when a node stops answering: after a master's failover, its
		// pipelines went on dialling the dead node (for a minute, in
		// TestRedisFailoverDuringLoad) until the periodic reload. A node
		// error reloads it now.
		cc.OnNewNode(func(n *redis.Client) { n.AddHook(countHook{&s.pipelines, cc.ReloadState}) })
	} else {
		c.AddHook(countHook{n: &s.pipelines})
	}
	if err := s.ping(ctx); err != nil {
		c.Close()
		if cfg.cluster && strings.Contains(err.Error(), "cluster support disabled") {
			// NB: Redis's own words ("This instance has cluster support
			// disabled") do not say what to give instead.
			return nil, fmt.Errorf("%w: %s is a single Redis server, not a node of a Redis Cluster: name it with redis://%s/%s (%v)", ErrURL, cfg.addrs[0], cfg.addrs[0], cfg.name, err)
		}
		if cfg.cluster && !errors.Is(err, ErrVersion) && !Permanent(err) && seedAnswers(ctx, cfg) {
			return nil, fmt.Errorf("%w: %w", ErrMasterDown, err)
		}
		return nil, err
	}
	if cfg.cluster && len(cfg.addrs) > 1 {
		if err := oneCluster(ctx, cfg); err != nil {
			c.Close()
			return nil, err
		}
	}
	if !cfg.cluster {
		// NB: redis:// is one server; on a node of a cluster, most keys
		// would answer MOVED.
		info, err := c.Info(ctx, "cluster").Result()
		if err == nil && strings.Contains(info, "cluster_enabled:1") {
			c.Close()
			return nil, fmt.Errorf("%w: %s is a node of a Redis Cluster: name the cluster with redis+cluster://%s,…/%s", ErrURL, cfg.addrs[0], cfg.addrs[0], cfg.name)
		}
	}
	return s, nil
}

// ErrMasterDown is Open's error when a node of the cluster answered but
// one of its masters did not: a failover may be under way, and an Open
// tried again once it is over gets past it. Where no node answers, Open
// fails with the connection's error alone.
var ErrMasterDown = errors.New("rediskv: the cluster answers, but one of its masters does not")

// seedAnswers reports whether any of the URL's nodes answers a PING
// within a second (all asked at once).
func seedAnswers(ctx context.Context, cfg urlConfig) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	answered := make(chan bool, len(cfg.addrs))
	for _, a := range cfg.addrs {
		go func() {
			n := redis.NewClient(&redis.Options{Addr: a, Username: cfg.username, Password: cfg.password, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
			defer n.Close()
			answered <- n.Ping(ctx).Err() == nil
		}()
	}
	for range cfg.addrs {
		if <-answered {
			return true
		}
	}
	return false
}

// oneCluster refuses a URL whose seed nodes are not all nodes of one
// cluster: each seed that answers within a second (all at once) is asked
// its node id and its node table, and the seeds are grouped by cluster
// (a seed is in the cluster whose table holds its id). A seed that does
// not answer is not asked (a node down is no reason to refuse).
//
// NB: go-redis takes its slot map from whichever seed it asks first: a
// seed list naming a node of each of two clusters was one index in a run
// and another in the next, and six inserts through one URL made two
// indexes of 300 documents each (an operator's review of Redis, RD2-3).
// The seeds are named by group: compared with the one table go-redis
// loaded, the good nodes were named as strays when it loaded the stray's
// (a read-through's RT2-6).
func oneCluster(ctx context.Context, cfg urlConfig) error {
	type seed struct {
		addr, id string
		table    map[string]bool
	}
	seeds := make([]*seed, len(cfg.addrs))
	var wg sync.WaitGroup
	for i, a := range cfg.addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := redis.NewClient(&redis.Options{Addr: a, Username: cfg.username, Password: cfg.password, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
			defer n.Close()
			tctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			id, err := n.Do(tctx, "CLUSTER", "MYID").Text()
			if err != nil {
				return
			}
			nodes, err := n.ClusterNodes(tctx).Result()
			if err != nil {
				return
			}
			table := map[string]bool{id: true}
			for line := range strings.Lines(nodes) {
				if nid, _, ok := strings.Cut(line, " "); ok {
					table[nid] = true
				}
			}
			seeds[i] = &seed{a, id, table}
		}()
	}
	wg.Wait()
	var groups [][]*seed
	for _, sd := range seeds {
		if sd == nil {
			continue
		}
		at := slices.IndexFunc(groups, func(g []*seed) bool { return g[0].table[sd.id] || sd.table[g[0].id] })
		if at < 0 {
			groups = append(groups, nil)
			at = len(groups) - 1
		}
		groups[at] = append(groups[at], sd)
	}
	if len(groups) < 2 {
		return nil
	}
	names := make([]string, len(groups))
	for i, g := range groups {
		addrs := make([]string, len(g))
		for j, sd := range g {
			addrs[j] = sd.addr
		}
		names[i] = "{" + strings.Join(addrs, ", ") + "}"
	}
	return fmt.Errorf("%w: the URL names nodes of %d Redis Clusters, %s: one URL must name nodes of one cluster", ErrURL, len(groups), strings.Join(names, " and "))
}

func (s *Store) ping(ctx context.Context) error {
	// NB: shards are pinged at once: any that is older than 7.0, or does
	// not say, leaves deletes refused at maxmemory.
	var old atomic.Bool
	var mu sync.Mutex
	s.evicting = nil
	policy := func(ctx context.Context, c redis.UniversalClient) {
		if p, limited := evictionPolicy(ctx, c); p != "" && p != "noeviction" {
			mu.Lock()
			s.evicting = append(s.evicting, Eviction{Server: serverName(c), Policy: p, Limited: limited})
			mu.Unlock()
		}
	}
	node := func(ctx context.Context, c redis.UniversalClient) error {
		v, err := pingNode(ctx, c)
		if !versionAtLeast(v, 7, 0) || v == "" {
			old.Store(true)
		}
		if err == nil {
			policy(ctx, c)
		}
		return err
	}
	var err error
	if cc, ok := s.c.(*redis.ClusterClient); ok {
		// NB: the masters must answer; a replica is asked its version
		// for a second at most. One that says it is older than 7.0
		// (below 6.2 too: it fails no open, as it takes no write until
		// promoted) is taken as old; one that does not answer in time, or
		// does not say, as new. Taken as old, a replica slow for a second
		// at Open left the handle unable to free memory at maxmemory for
		// its life (deletes, sweeps and repairs refused there, a sweep's
		// count refused after its claims); the cost the other way is a
		// mixed-version cluster whose 6.2 replica is later promoted, which
		// refuses the allow-oom scripts until the next Open. Every
		// replica had to answer: one down, frozen or unreachable from this
		// host (a cluster that announces private addresses) failed every
		// open, reads too, and the message blamed a master.
		// NB: a cluster's masters run 7.0 or later: Sync asks CLUSTER
		// SHARDS (7.0) which masters have replicas, and on 6.2 every
		// synced write would fail with its unknown subcommand.
		err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			v, err := pingNode(ctx, n)
			if !versionAtLeast(v, 7, 0) || v == "" {
				old.Store(true)
			}
			if err == nil && v != "" && !versionAtLeast(v, 7, 0) {
				return fmt.Errorf("%w: %s runs Redis %s, and lshdb needs Redis 7.0 or later in a cluster (6.2 for a single server)", ErrVersion, n.Options().Addr, v)
			}
			if err == nil {
				policy(ctx, n)
			}
			return err
		})
		if err == nil {
			// NB: go-redis takes its own timeouts, not the context's, for
			// a node that does not answer (3 s a try): the probes are
			// waited for a second, and what answers later is not heard.
			var replicasOld atomic.Bool
			done := make(chan struct{})
			go func() {
				defer close(done)
				cc.ForEachSlave(ctx, func(ctx context.Context, n *redis.Client) error {
					if v, err := pingNode(ctx, n); errors.Is(err, ErrVersion) || err == nil && v != "" && !versionAtLeast(v, 7, 0) {
						replicasOld.Store(true)
					}
					return nil
				})
			}()
			select {
			case <-done:
				if replicasOld.Load() {
					old.Store(true)
				}
			case <-time.After(time.Second):
				// NB: taken as new: the goroutine ends with go-redis's
				// timeouts, and what it hears is not heard.
			}
		}
	} else {
		err = node(ctx, s.c)
	}
	s.freeAtOOM = !old.Load()
	return err
}

// CheckNewName refuses the name of an index about to be created that
// holds a control character or is not UTF-8: "x%00y" and "a%0Ab" made
// keys that redis-cli shows cut short or over two lines. NB: at creation
// only, so that an index made under such a name before is still opened,
// and dropped.
func (s *Store) CheckNewName() error {
	name := strings.TrimSuffix(strings.TrimPrefix(s.prefix, "lshdb:"), ":")
	if !utf8.ValidString(name) || strings.IndexFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return fmt.Errorf("%w: the index name %q holds a control character or is not UTF-8", ErrURL, name)
	}
	return nil
}

// pingNode pings one server (waiting while it loads its data, as one
// restarted does) and checks its version: lshdb's writes use
// what Redis 6.2 brought (it was SET … GET and GETDEL). NB: a server of
// an older Redis took the index's first writes and failed later with its
// raw "unknown command 'getdel'". A server that does not say its version (INFO
// refused) is taken as it is. It returns the server's version ("" when
// it does not say).
func pingNode(ctx context.Context, c redis.UniversalClient) (version string, _ error) {
	for {
		err := c.Ping(ctx).Err()
		if err == nil {
			break
		}
		var re redis.Error
		if !errors.As(err, &re) || !strings.HasPrefix(re.Error(), "LOADING") {
			return "", err
		}
		// NB: "LOADING Redis is loading the dataset in memory" failed an
		// open at once while a restarted server read its files.
		select {
		case <-ctx.Done():
			return "", err
		case <-time.After(100 * time.Millisecond):
		}
	}
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "", nil
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			if !versionAtLeast(v, 6, 2) {
				return v, fmt.Errorf("%w: %s runs Redis %s, and lshdb needs Redis 6.2 or later", ErrVersion, serverName(c), v)
			}
			return v, nil
		}
	}
	return "", nil
}

// evictionPolicy returns the server's maxmemory-policy ("" when it does
// not say), and whether it has a maxmemory (0: no limit, nothing evicted
// until one is set): INFO, which a server that renamed CONFIG answers.
func evictionPolicy(ctx context.Context, c redis.UniversalClient) (policy string, limited bool) {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "maxmemory_policy:"); ok {
			policy = v
		} else if v, ok := strings.CutPrefix(line, "maxmemory:"); ok {
			limited = v != "0"
		}
	}
	return policy, limited
}

// Eviction is a server whose maxmemory-policy evicts keys (Evicting).
type Eviction struct {
	Server, Policy string
	// Limited: the server has a maxmemory (0 is none: it evicts nothing
	// until one is set).
	Limited bool
}

func (e Eviction) String() string {
	s := e.Server + " (maxmemory-policy " + e.Policy
	if !e.Limited {
		s += ", no maxmemory yet"
	}
	return s + ")"
}

// Evicting returns the masters (or the single server) that evict keys at
// their maxmemory, each with its policy, as the open found them: an
// index's keys evicted there leave documents without ids, ids without
// records, counters gone. NB: noeviction refuses writes instead, which
// lshdb reports as a full disk.
func (s *Store) Evicting() []Eviction { return slices.Clone(s.evicting) }

// serverName is the address of a single server's client (for messages).
func serverName(c redis.UniversalClient) string {
	if n, ok := c.(*redis.Client); ok {
		return n.Options().Addr
	}
	return "a server"
}

// versionAtLeast reports whether the version v ("MAJOR.MINOR.PATCH") is
// at least major.minor; a version it cannot read passes.
func versionAtLeast(v string, major, minor int) bool {
	f := strings.SplitN(v, ".", 3)
	if len(f) < 2 {
		return true
	}
	ma, err1 := strconv.Atoi(f[0])
	mi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return true
	}
	return ma > major || ma == major && mi >= minor
}

// ErrVersion is Open's error for a Redis server older than lshdb needs.
var ErrVersion = errors.New("rediskv: the Redis server is too old")

// OutOfMemory reports whether err is Redis's refusal of a write at its
// maxmemory (the noeviction policy): "OOM command not allowed …", a
// script's included.
func OutOfMemory(err error) bool {
	var re redis.Error
	// NB: Redis 6 wraps a script's refused call: "ERR Error running
	// script (…): … -OOM command not allowed …".
	return errors.As(err, &re) && (strings.HasPrefix(re.Error(), "OOM ") || strings.Contains(re.Error(), "OOM command not allowed"))
}

// AccessDenied reports whether err is Redis's refusal of the client's
// credentials (NOAUTH: a password is required; WRONGPASS: a wrong user or
// password) or rights (NOPERM, or a script's call refused: an ACL user
// without the right to a command or key).
func AccessDenied(err error) bool {
	return BadCredentials(err) || NoRights(err)
}

// BadCredentials reports whether err is Redis's NOAUTH or WRONGPASS.
func BadCredentials(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && (strings.HasPrefix(re.Error(), "NOAUTH") || strings.HasPrefix(re.Error(), "WRONGPASS"))
}

// NoRights reports whether err is Redis's refusal of a command or key to
// an ACL user: NOPERM, or a script's call refused, which Redis words
// otherwise ("ERR The user executing the script can't run this command
// or subcommand", "… can't access at least one of the keys …" in 6.2 and
// 7.0; "ERR ACL failure in script: …" from 7.2).
func NoRights(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	return strings.HasPrefix(msg, "NOPERM") || strings.Contains(msg, "ACL failure in script") ||
		strings.Contains(msg, "user executing the script can't")
}

// WrongType says whether err is Redis's answer to a command on a key
// that holds another type of value (WRONGTYPE): under an index's prefix,
// a key lshdb did not write.
func WrongType(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "WRONGTYPE ")
}

// Permanent reports whether err is a reply of Redis that a retry does not
// change: memory full (OutOfMemory), an authentication or permission
// refusal, a command, type or syntax it does not take. What a failover
// gives (a connection lost, CLUSTERDOWN, TRYAGAIN, LOADING, READONLY,
// MASTERDOWN, a replica's acknowledgement missing) is not permanent.
func Permanent(err error) bool {
	if OutOfMemory(err) {
		return true
	}
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	for _, p := range []string{"NOAUTH", "WRONGPASS", "NOPERM", "WRONGTYPE", "ERR unknown command", "ERR syntax error", "ERR wrong number of arguments"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// Close closes the connections.
//
// NB: it first deletes what the handle's writes that are over kept
// (Finished: their swaps and count marks), which the next write would
// have: a command's last write of replacements left 2,048 swaps keys, 400
// KB, for 10 minutes (a read-through, RT4-1). At most a second, and what
// it cannot delete expires.
func (s *Store) Close() error {
	fin := s.takeFinished()
	keys := append(fin.marks, fin.swaps...)
	if len(keys) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, _ = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				p.Del(ctx, k)
			}
			return nil
		})
		cancel()
	}
	return s.c.Close()
}

// Pipelines returns the number of pipelines sent to nodes so far: the
// round trips (a cluster pipeline sends one to each node it touches).
func (s *Store) Pipelines() int64 { return s.pipelines.Load() }

// countHook counts the pipelines sent to a node, and calls reload (when
// set) after a failure that is not a Redis error reply: the node is down
// or unreachable.
type countHook struct {
	n      *atomic.Int64
	reload func(context.Context)
}

func (h countHook) failed(err error) {
	var rerr redis.Error
	if err != nil && h.reload != nil && !errors.As(err, &rerr) && !errors.Is(err, context.Canceled) {
		h.reload(context.Background())
	}
}

func (h countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		err := next(ctx, cmd)
		h.failed(err)
		return err
	}
}
func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		err := next(ctx, cmds)
		h.failed(err)
		return err
	}
}

func (s *Store) manifestKey() string { return s.prefix + "manifest" }
func (s *Store) writersKey() string  { return s.prefix + "writers" }

// Register records token as a writable handle of the index (until
// Unregister), with the time, and again as a heartbeat, so that a process deciding whether an index it created is
// unused can tell one that another process opened and has not written to
// yet. A process killed before Unregister leaves its token: such an index
// then reads as in use (kept), never the reverse.
//
// NB: a script, flagged to run at maxmemory (script): a plain HSET was
// refused there, and with it every writable open, those of the deletes
// and repairs that free a full Redis among them (a review's R1). A
// registration takes a few bytes.
func (s *Store) Register(ctx context.Context, token string) error {
	return s.evalOne(ctx, s.script(registerScript), []string{s.writersKey()}, token, time.Now().Unix()).Err()
}

// registerScript sets the registration ARGV[1] to the server's time, in
// seconds (Register). NB: the server's, not the writer's (ARGV[2], kept
// for the scripts' sake): Writers reads the ages against the same clock,
// so that a writer on a host whose clock is behind does not read as long
// silent (a registration long silent is taken for a killed process's).
const registerScript = `redis.call('HSET', KEYS[1], ARGV[1], redis.call('TIME')[1])
return 1`

// Unregister removes token (Register).
func (s *Store) Unregister(ctx context.Context, token string) error {
	return s.c.HDel(ctx, s.writersKey(), token).Err()
}

// Writers returns the registered writable handles (Register), each with
// the time it was last seen: its registration, or its last Register
// again (a heartbeat), on this host's clock (its age on the server's, where
// the registrations are kept, from now). A value lshdb did not write reads
// as the zero time.
func (s *Store) Writers(ctx context.Context) (map[string]time.Time, error) {
	v, err := s.evalOne(ctx, writersScript, []string{s.writersKey()}).Slice()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var serverNow int64
	if len(v) > 0 {
		if t, ok := v[0].(string); ok {
			serverNow, _ = strconv.ParseInt(t, 10, 64)
		}
	}
	seen := make(map[string]time.Time, len(v)/2)
	for i := 1; i+1 < len(v); i += 2 {
		tok, _ := v[i].(string)
		val, _ := v[i+1].(string)
		var at time.Time
		if sec, err := strconv.ParseInt(val, 10, 64); err == nil && serverNow > 0 {
			at = now.Add(-time.Duration(serverNow-sec) * time.Second)
		}
		seen[tok] = at
	}
	return seen, nil
}

// writersScript returns the server's time (seconds) and then the
// registrations (HGETALL's fields and values), read at once.
const writersScript = `local out = {redis.call('TIME')[1]}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all do out[#out + 1] = all[i] end
return out`

func (s *Store) countersKey() string    { return "{" + strings.TrimSuffix(s.prefix, ":") + "}:counters" }
func (s *Store) idKey(id string) string { return s.prefix + "i:" + id }
func (s *Store) docKey(n uint64) string { return s.prefix + "d:" + strconv.FormatUint(n, 10) }
func (s *Store) docPattern() string     { return s.prefix + "d:*" }
func (s *Store) postingPattern() string { return s.prefix + "p:*" }
func (s *Store) expiryKey() string      { return s.prefix + "x" }

// swapsKey names the swaps of the write token on the slot of the id key
// k (swapScript): a script's keys must share a slot in a cluster, and an
// id, which may hold braces, cannot be a hash tag.
func (s *Store) swapsKey(token, k string) string {
	return "{" + slotTags()[slotOf(k)] + "}" + s.prefix + "swaps:" + token
}

// slotTags holds, for each cluster slot, a short hash tag of keys in it.
var slotTags = sync.OnceValue(func() []string {
	tags := make([]string, 16384)
	left := len(tags)
	for i := uint64(0); left > 0; i++ {
		t := strconv.FormatUint(i, 36)
		if sl := slotOf(t); tags[sl] == "" {
			tags[sl] = t
			left--
		}
	}
	return tags
})

// claimsKey names the claims of one retirement or sweep (claimScript):
// hash-tagged to the expiry index's slot, which a script on both needs in
// a cluster (the index's name holds no brace: parseURL).
func (s *Store) claimsKey(token string) string { return "{" + s.expiryKey() + "}:claims:" + token }
func (s *Store) postKey(band int, bucket uint64) string {
	return s.prefix + "p:" + strconv.Itoa(band) + ":" + strconv.FormatUint(bucket, 16)
}

// manifestCopies is how many copies of the manifest an index keeps
// beside it (manifestCopyKey).
const manifestCopies = 2

// manifestCopyKey names copy i of the manifest of the index whose keys
// begin with prefix: a key hash-tagged to a slot in the (i+1)th of three
// ranges of the slots (slotThird), other than the manifest's own range,
// so that in a cluster of three masters or more with the slots spread
// evenly (redis-cli --cluster create) the manifest and its copies are on
// three masters.
//
// NB: the manifest was one key: a master restarted empty before its
// failover took it, and the rest of the index, intact on the other
// masters, could only be dropped (an operator's review of Redis, RD2-4).
func manifestCopyKey(prefix string, i int) string {
	want := (slotThird(slotOf(prefix+"manifest")) + 1 + i) % 3
	for n := 0; ; n++ {
		tag := prefix + "manifest:" + strconv.Itoa(n)
		if slotThird(slotOf(tag)) == want {
			return "{" + tag + "}:copy"
		}
	}
}

// slotThird is which of the three ranges of slots that redis-cli
// --cluster create gives three masters (0-5460, 5461-10922, 10923-16383)
// holds slot.
func slotThird(slot int) int {
	switch {
	case slot < 5461:
		return 0
	case slot < 10923:
		return 1
	}
	return 2
}

// manifestCopyKeys returns the keys of the manifest's copies.
func (s *Store) manifestCopyKeys() []string {
	keys := make([]string, manifestCopies)
	for i := range keys {
		keys[i] = manifestCopyKey(s.prefix, i)
	}
	return keys
}

// ManifestKeys returns the keys of the manifest of the index name and of
// its copies: an index whose manifest is lost is one that lost them all.
func ManifestKeys(name string) []string {
	s := Store{prefix: "lshdb:" + name + ":"}
	return append([]string{s.manifestKey()}, s.manifestCopyKeys()...)
}

// Manifest returns the stored manifest, or nil when there is none. Where
// the manifest is gone but a copy is there (its master lost it), it
// returns the copy, and puts it back in place unless one is there by
// then.
func (s *Store) Manifest(ctx context.Context) ([]byte, error) {
	b, err := s.c.Get(ctx, s.manifestKey()).Bytes()
	if !errors.Is(err, redis.Nil) {
		return b, err
	}
	for _, k := range s.manifestCopyKeys() {
		b, err := s.c.Get(ctx, k).Bytes()
		switch {
		case errors.Is(err, redis.Nil):
			continue
		case err != nil:
			return nil, err
		}
		// NB: a reader that may not write (an ACL user that reads) has
		// the copy still: the next writer puts it back.
		if set, err := s.c.SetNX(ctx, s.manifestKey(), b, 0).Result(); err == nil && !set {
			return s.Manifest(ctx) // NB: put back by another meanwhile
		}
		return b, nil
	}
	return nil, nil
}

// SetManifest stores the manifest, and its copies.
func (s *Store) SetManifest(ctx context.Context, m []byte) error {
	if err := s.c.Set(ctx, s.manifestKey(), m, 0).Err(); err != nil {
		return err
	}
	for _, k := range s.manifestCopyKeys() {
		if err := s.c.Set(ctx, k, m, 0).Err(); err != nil {
			return err
		}
	}
	return nil
}

// CopyManifest stores the copies of the manifest m that are missing (an
// index an older lshdb made has none). A writable handle calls it once it
// has read the manifest.
func (s *Store) CopyManifest(ctx context.Context, m []byte) error {
	for _, k := range s.manifestCopyKeys() {
		if err := s.c.SetNX(ctx, k, m, 0).Err(); err != nil {
			return err
		}
	}
	return nil
}

// Leftovers returns keys of an index under this name that has no
// manifest: first among those every index that was written holds (its
// counters, its first document's record, its expiry index), a few
// lookups; when none is there, the first key under the index's prefix
// that a SCAN of every master finds, where the masters hold at most
// LeftoverScanKeys keys in all. An index created there would adopt them
// (documents made with other parameters, counters that count them).
// unscanned is the number of keys on the masters when they hold more,
// and the SCAN did not run (0 when it ran).
//
// NB: the lookups alone missed an index whose three keys were lost and
// the rest kept: in a cluster, one master in three restarted without
// persistence held all three for 1 index name in 9, and a new index with
// the default parameters was created over 6,752 keys of the old one (a
// review). The SCAN runs only where no manifest is (an index being
// created, or a name misspelt), and stops at the first key it finds; it
// reads every key name of a master with none (about 10 ms of the
// server's time for each 10,000): on 17 million keys of other data it
// outlasted the open's 30 s, and no index could be made there (a
// maintainer's review).
func (s *Store) Leftovers(ctx context.Context) (found []string, unscanned int64, err error) {
	for _, k := range []string{s.countersKey(), s.docKey(1), s.expiryKey()} {
		n, err := s.c.Exists(ctx, k).Result()
		if err != nil {
			return nil, 0, err
		}
		if n > 0 {
			found = append(found, k)
		}
	}
	if len(found) > 0 {
		return found, 0, nil
	}
	var mu sync.Mutex
	var keys int64
	if err := s.eachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		n, err := c.DBSize(ctx).Result()
		mu.Lock()
		keys += n
		mu.Unlock()
		return err
	}); err != nil {
		return nil, 0, err
	}
	if keys > LeftoverScanKeys {
		return nil, keys, nil
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	err = s.eachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		for cursor := uint64(0); ; {
			page, next, err := c.Scan(ctx, cursor, s.prefix+"*", 10000).Result()
			if err != nil {
				mu.Lock()
				defer mu.Unlock()
				if found != nil {
					return nil // NB: cancelled by another master's find
				}
				return err
			}
			// NB: not the registrations of writable handles, which a
			// writable Open makes before it reads the manifest (its own
			// and those of processes creating the index with it).
			if i := slices.IndexFunc(page, func(k string) bool { return k != s.writersKey() }); i >= 0 {
				mu.Lock()
				if found == nil {
					found = page[i : i+1]
				}
				mu.Unlock()
				stop()
				return nil
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	})
	if err != nil {
		return nil, 0, err
	}
	return found, 0, nil
}

// LeftoverScanKeys is the most keys the masters may hold in all for
// Leftovers to SCAN them: about a second of the servers' time.
var LeftoverScanKeys int64 = 1_000_000

// MarkCounters marks the index's counters with mark (the index's
// instance), unless they hold a mark, and from then on gives a put its
// numbers only from counters that hold this one (numbersScript): a put
// that finds the mark gone fails with ErrCountersGone, and writes
// nothing. A writable handle calls it once it has read the manifest.
//
// NB: a build that outlived a restart of Redis without persistence went
// on writing into keys no manifest named, and ended with exit status 0:
// the handle learnt that the index was gone only at its heartbeat, every
// 30 s, and numbers given again from 1 by the new counters were taken (a
// review: 83,000 documents written after the restart, none readable).
//
// Counters that are not there are made (marked) only when create says
// the index is new (its manifest made by this handle's open): an older
// index's counters gone (Redis lost them) are left gone, gone reports it,
// and the handle's puts are refused (ErrCountersGone) until Repair puts
// them back. NB: they were made again, from 0, at every writable open:
// the next insert succeeded, and info then counted 1 document of an
// index of 963 ids, exit 0, where it had said the counters were gone (an
// operator's review of Redis Cluster, RC-1).
func (s *Store) MarkCounters(ctx context.Context, mark string, create bool) (gone bool, err error) {
	// NB: the mark is set by a script, which may run at maxmemory (a
	// writable open there deletes), and only where none is (an HSETNX is
	// refused at maxmemory even where the field is).
	got, err := s.evalOne(ctx, s.script(counterMarkScript), []string{s.countersKey()}, mark, create).Text()
	if err != nil {
		return false, err
	}
	if got == "" {
		s.mark = mark // NB: numbersScript refuses every put: no mark there
		return true, nil
	}
	if got != mark {
		return false, fmt.Errorf("%w: %s holds the mark %q, not %q", ErrCountersGone, s.countersKey(), got, mark)
	}
	s.mark = mark
	return false, nil
}

// counterMarkScript sets the counters KEYS[1]'s mark to ARGV[1] unless they
// hold one, and returns theirs; counters that are not there are made only
// when ARGV[2] is 1 (a new index), else it returns "". (Counters with no
// mark are an index's of an lshdb before marks: marked.)
const counterMarkScript = `local m = redis.call('HGET', KEYS[1], 'index')
if m then return m end
if ARGV[2] ~= '1' and redis.call('EXISTS', KEYS[1]) == 0 then return '' end
redis.call('HSET', KEYS[1], 'index', ARGV[1])
return ARGV[1]`

// numbersScript adds ARGV[1] to the counters KEYS[1]'s next number and
// returns it, if they hold the mark ARGV[2] (MarkCounters); else -1.
const numbersScript = `if redis.call('HGET', KEYS[1], 'index') ~= ARGV[2] then return -1 end
return redis.call('HINCRBY', KEYS[1], 'next', ARGV[1])`

// CreateManifest stores the manifest of a new index unless one is stored
// (two processes creating the same index at once: one wins); created says
// whether this one did.
func (s *Store) CreateManifest(ctx context.Context, m []byte) (created bool, err error) {
	if created, err = s.c.SetNX(ctx, s.manifestKey(), m, 0).Result(); err != nil || !created {
		return created, err
	}
	return true, s.CopyManifest(ctx, m)
}

// Put is one document to store: its id, its record, and its bucket in
// each band (Buckets[band]).
type Put struct {
	ID      string
	Record  []byte
	Buckets []uint64
	// Expires is when the document expires, in Unix nanoseconds; 0:
	// never.
	Expires int64
}

// WriteSet is what one Apply writes: puts (an id already stored is
// replaced) and deletes of ids. An id may appear once.
type WriteSet struct {
	Puts    []Put
	Deletes []string
	// Again, when set, is the Attempt of an Apply of this same write set
	// that failed (Result.Attempt): this Apply is that write sent again,
	// as one (see Attempt), rather than a write of its own.
	Again *Attempt
}

// Result says what an Apply did: the doc numbers given to the puts, the
// documents replaced, and the deleted ids that were not stored.
type Result struct {
	Nums     []uint64
	Replaced int
	Missing  []string
	// Attempt is the write this Apply made, failed or not: to send it
	// again (WriteSet.Again), or to say it is over (Finished).
	Attempt *Attempt
}

// An Attempt is one write of Apply: the document numbers it gave its puts
// and the token that its steps carry. Applied again with the same write
// set (WriteSet.Again), every step is the first one's sent again: the
// same records under the same numbers, the ids' swaps answered as they
// were (so that what they replaced is retired, and counted, once), the
// marks and claims of its retirements too, and the live count added once.
//
// NB: a batch that a failover broke off used to be written again as a
// new write, under new numbers: its ids named the first try's records,
// which the second took for documents it replaced. A load of 30,000 new
// documents through a failover said "657 replaced", left the live count
// 657 short and 6,331 records no id names, and check failed until a
// repair (an operator's review, RD2-2).
type Attempt struct {
	nums  []uint64 // nil until numbers were given
	token string
	began time.Time
	// swapped says that a try got the ids' swaps answered; replaced is
	// how many of its puts replaced a document then.
	swapped  bool
	replaced int
	// swaps are the keys that hold what its ids' swaps answered
	// (swapsKey), deleted once it is over (Finished).
	swaps []string
}

// Resumable says whether a is a write that Apply still sends again as
// itself (WriteSet.Again): within resumeWithin of its first try.
func (a *Attempt) Resumable() bool { return a != nil && time.Since(a.began) < resumeWithin }

// resumeWithin is how long after its first try a write may be sent again
// as itself (WriteSet.Again): well within countedMemory and claimMemory,
// which keep its token's answers. Past it, Apply makes a write of its own.
const resumeWithin = 5 * time.Minute

// Finished says that the write a is over (applied and, if the caller
// waits for replicas, replicated): it will not be sent again, and the
// mark that it counted (countScript) and the swaps it kept can go. NB:
// deleted by the handle's next write (the mark by its count, on the
// counters' slot; the swaps with its end) or by Close: no round trip of
// their own.
func (s *Store) Finished(a *Attempt) {
	if a == nil {
		return
	}
	s.finishedMu.Lock()
	defer s.finishedMu.Unlock()
	s.finished.marks = lastOf(append(s.finished.marks, s.countedKey(a.token)), maxFinished)
	s.finished.swaps = lastOf(append(s.finished.swaps, a.swaps...), maxFinished)
}

// maxFinished bounds the keys of each kind that a Store keeps to delete
// (Finished); the oldest past it are left to expire (countedMemory,
// claimMemory). NB: every write takes them all (takeFinished).
const maxFinished = 1 << 14

// lastOf returns the last n of xs at most.
func lastOf(xs []string, n int) []string { return xs[max(0, len(xs)-n):] }

// takeFinished returns the keys of finished writes to delete, and forgets
// them.
func (s *Store) takeFinished() finishedKeys {
	s.finishedMu.Lock()
	defer s.finishedMu.Unlock()
	f := s.finished
	s.finished = finishedKeys{}
	return f
}

// failAfter, when set by a test, stops Apply after that many of its
// steps, as a crash would (1: records written; 2: postings and ids
// written; 3: old documents marked deleted; 4: their postings removed;
// 5: the live count added; 6: the old records deleted, the whole write
// done). failOnce stops the next Apply to reach its step, once, as a
// failover would.
var failAfter, failOnce atomic.Int32

var (
	errCrash    = errors.New("rediskv: a crash injected by a test")
	errFailover = errors.New("rediskv: a failover injected by a test")
)

// crashAt returns the error a test injected after Apply's step, if any.
func crashAt(step int32) error {
	if failAfter.Load() == step {
		return errCrash
	}
	if failOnce.CompareAndSwap(step, 0) {
		return errFailover
	}
	return nil
}

// InjectFailover makes the next Apply to reach step (see failAfter) stop
// there with an error, as a master failing over would: for the tests of
// a write sent again (WriteSet.Again).
func InjectFailover(step int32) (restore func()) {
	failOnce.Store(step)
	return func() { failOnce.Store(0) }
}

// retireHook, when set by a test, is called by retire before its marks
// ("mark") and before it removes postings and expiry entries ("unpost"):
// where a TTL that runs out, or a sweep, meets a write.
var retireHook func(step string)

// InjectCrash makes every Apply stop after step (see failAfter) until
// restore is called, as a crash would: for the tests of the packages
// above this one (db's), which must see what readers see in between.
func InjectCrash(step int32) (restore func()) {
	failAfter.Store(step)
	return func() { failAfter.Store(0) }
}

// Apply writes ws in the order the package documents. It is not atomic:
// a failure part way leaves what Repair removes and no posting a reader
// would return for a document not fully written, unless the write is
// sent again as itself (WriteSet.Again), which finishes it; Finished
// says when it is over.
func (s *Store) Apply(ctx context.Context, ws *WriteSet) (Result, error) {
	var res Result
	ids := make([]string, 0, len(ws.Puts)+len(ws.Deletes))
	for _, p := range ws.Puts {
		ids = append(ids, p.ID)
	}
	ids = append(ids, ws.Deletes...)
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if id == "" || seen[id] {
			return res, fmt.Errorf("rediskv: id %q is empty or given twice in one write set", id)
		}
		seen[id] = true
	}
	// NB: one token for the whole write, its swaps, marks, claims and
	// count, so that the write sent again (WriteSet.Again) gets the first
	// one's answers.
	att := &Attempt{token: rand.Text(), began: time.Now()}
	if a := ws.Again; a.Resumable() && (a.nums == nil || len(a.nums) == len(ws.Puts)) {
		att = a
	}
	res.Attempt = att
	// 1. The new records, under fresh numbers (the first try's, sent
	// again).
	if att.nums != nil {
		res.Nums = append(res.Nums, att.nums...)
	} else if len(ws.Puts) > 0 {
		var last int64
		var err error
		if s.mark == "" {
			last, err = s.c.HIncrBy(ctx, s.countersKey(), "next", int64(len(ws.Puts))).Result()
		} else {
			last, err = s.evalOne(ctx, numbersScript, []string{s.countersKey()}, len(ws.Puts), s.mark).Int64()
		}
		if err != nil {
			return res, err
		}
		if last < 0 {
			return res, fmt.Errorf("%w: %s holds no mark %q; no id of this write was written", ErrCountersGone, s.countersKey(), s.mark)
		}
		first := uint64(last) - uint64(len(ws.Puts)) + 1
		for i := range ws.Puts {
			res.Nums = append(res.Nums, first+uint64(i))
		}
		att.nums = slices.Clone(res.Nums)
	}
	// NB: a record is written only under a number no record holds: one
	// that does means the counters went back (Redis lost writes, the
	// counters' among them, and gave out numbers again), and a put wrote
	// over another id's document, which its id still named (a Redis
	// restarted without persistence). A record of the same id and bytes
	// is taken as this write's own: the same pipeline sent again
	// (go-redis resends one whose answer came after its read timeout), a
	// batch retried after a failover lost the counters' increment, or the
	// same document stored under that number before the loss (its id
	// names it still, and is not retired: below).
	made := make([]*redis.Cmd, len(ws.Puts))
	if _, err := s.scripted(ctx, func(p redis.Pipeliner, eval evaluator) error {
		for i, put := range ws.Puts {
			at := int64(0)
			if put.Expires != 0 {
				at = expiryMillis(put.Expires)
			}
			made[i] = eval(p, putRecordScript, []string{s.docKey(res.Nums[i])}, put.ID, put.Record, bucketBytes(put.Buckets), at)
		}
		return nil
	}); err != nil {
		return res, err
	}
	for i, m := range made {
		if n, _ := m.Int(); n != 1 {
			return res, fmt.Errorf("%w: document number %d, given to this write, is held by another record; no id of this write was written (its records are orphans, which lshdb check --repair removes, putting the counters right: stop every writer first)", ErrCountersLost, res.Nums[i])
		}
	}
	if err := crashAt(1); err != nil {
		return res, err
	}
	// 2. Their postings, then their ids and expiry entries.
	//
	// NB: two pipelines, one after the other: a cluster pipeline sends
	// each node its part at once, so in one pipeline an id could land
	// before postings on other nodes, and a writer killed then left a
	// document that Get found and queries missed.
	// NB: the expiry entry after the postings: written with the record,
	// a sweep (which runs beside writers, in any process) could take the
	// entry of a document already due before its postings were written,
	// remove none, and the postings written next named no document for
	// good (16 to 400 of 300 puts' postings, in an embedding review).
	if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, put := range ws.Puts {
			num := strconv.FormatUint(res.Nums[i], 10)
			for band, b := range put.Buckets {
				p.SAdd(ctx, s.postKey(band, b), num)
			}
		}
		return nil
	}); err != nil {
		return res, err
	}
	// NB: each id is swapped (swapScript: set or deleted, and the number
	// it held returned, in one step), not read first and written after:
	// the document an id named when this write replaced it is retired by
	// this write alone. Read first, two writers of one id both retired
	// the same old document (and counted it twice: the live counter went
	// below zero), and a delete removed the id a put had just written,
	// leaving its document stored under no id.
	// NB: swapScript keeps what it swapped out for this write (token)
	// until the write ends: sent again by go-redis, SET … GET answered
	// the write's own new number and GETDEL nothing, the first send's
	// answers lost, and the documents replaced or deleted
	// were never retired: they stayed in query results (a delete
	// acknowledged, its id reported missing), their records orphans and
	// the live count too high until a repair.
	token := att.token
	prev := make([]*redis.Cmd, len(ids))
	swaps := make(map[string]bool)
	if cmds, err := s.scripted(ctx, func(p redis.Pipeliner, eval evaluator) error {
		for i, put := range ws.Puts {
			k := s.idKey(put.ID)
			prev[i] = eval(p, swapScript, []string{k, s.swapsKey(token, k)}, res.Nums[i], claimMemory.Milliseconds())
			if put.Expires != 0 {
				p.PExpireAt(ctx, k, expiryTime(put.Expires))
				p.ZAdd(ctx, s.expiryKey(), redis.Z{Score: float64(expiryMillis(put.Expires)), Member: expiryMember(res.Nums[i], put.Buckets)})
			}
		}
		for i, id := range ws.Deletes {
			k := s.idKey(id)
			prev[len(ws.Puts)+i] = eval(p, s.script(swapScript), []string{k, s.swapsKey(token, k)}, "", claimMemory.Milliseconds())
		}
		return nil
	}); err != nil {
		// NB: a pipeline's error is its first command's: an id new to
		// the index answers redis.Nil there, which hid a later failure
		// (a put acknowledged with no id written).
		if err = pipeErr(cmds, err); err != nil {
			return res, err
		}
	}
	oldNums := make([]uint64, len(ids)) // 0: none
	for i, c := range prev {
		if v, err := c.Text(); err == nil {
			if oldNums[i], err = strconv.ParseUint(v, 10, 64); err != nil {
				return res, fmt.Errorf("%w: id %q named %q", ErrForeignValue, ids[i], v)
			}
			if i >= len(ws.Puts) || oldNums[i] != res.Nums[i] {
				swaps[s.swapsKey(token, s.idKey(ids[i]))] = true
			}
		}
		// NB: an id that names this write's own new record: the pipeline
		// was sent again (go-redis resends one answered after its read
		// timeout; the first send's answer, the number it named before,
		// is lost, and that record left to Repair as an orphan), or the
		// record was the same document's before Redis lost the counters
		// (putRecordScript). Retired, it was this write's own document.
		if i < len(ws.Puts) && oldNums[i] == res.Nums[i] {
			oldNums[i] = 0
		}
	}
	if err := crashAt(2); err != nil {
		return res, err
	}
	// 3. Retire the replaced and deleted documents: mark, unpost, delete.
	oldBuckets := make([]*redis.StringCmd, len(ids))
	if cmds, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range oldNums {
			if n != 0 {
				oldBuckets[i] = p.HGet(ctx, s.docKey(n), "b")
			}
		}
		return nil
	}); err != nil {
		if err = pipeErr(cmds, err); err != nil {
			return res, err
		}
	}
	var retired []int
	for i, n := range oldNums {
		if n != 0 {
			retired = append(retired, i)
			if i < len(ws.Puts) {
				res.Replaced++
			}
		} else if i >= len(ws.Puts) {
			res.Missing = append(res.Missing, ids[i])
		}
	}
	// NB: sent again once the write was whole (its replicas' wait
	// failed), its swaps were deleted: every id names its own record,
	// and the first try's answer is the one that counts what it replaced.
	if att.swapped {
		res.Replaced = att.replaced
	} else {
		att.swapped, att.replaced = true, res.Replaced
	}
	won, gone, err := s.retire(ctx, retired, oldNums, oldBuckets, ids, token)
	if err != nil && !errors.Is(err, ErrCountersLost) {
		return res, err
	}
	// NB: a record of another id left as it was (ErrCountersLost), the
	// rest of the write applied is counted too.
	foreign := err
	// NB: a retirement counts once: by this write, or by the expiry sweep
	// that removed it meanwhile (retire).
	// NB: counted before the retired records and the swaps are deleted:
	// sent again after, the write found its swaps and marks gone, retired
	// nothing, and counted its replacements as new documents.
	// NB: counted even when it adds nothing (a write of replacements
	// alone), for its mark: sent again after a failover lost some of its
	// keys (a master's last writes, unreplicated), the write found
	// records it had retired gone, took them for retired by another, and
	// counted them as live; the count, once marked, is not made again (a
	// Redis review, RD3-1: 883 too many after two failovers).
	live := int64(len(ws.Puts)) - int64(won)
	fin := s.takeFinished()
	if err := s.addLive(ctx, live, token, fin.marks...).Err(); err != nil {
		return res, err
	}
	if err := crashAt(5); err != nil {
		return res, err
	}
	// NB: the write's swaps are kept until it is over (Finished): sent
	// again, it gets their answers, and retires what it replaced even
	// where a failover lost the old record's delete (it was left, marked
	// and unposted, a record no id names: RD3-1).
	att.swaps = slices.AppendSeq(att.swaps, maps.Keys(swaps))
	slices.Sort(att.swaps)
	att.swaps = slices.Compact(att.swaps)
	if err := s.deleteRetired(ctx, gone, fin.swaps, token); err != nil {
		return res, err
	}
	if err := crashAt(6); err != nil {
		return res, err
	}
	return res, foreign
}

// retire retires the documents oldNums[i] for i in which: marks their
// records deleted and removes their postings (and expiry entries); the
// records are deleted after, by deleteRetired, with gone (their keys),
// once the caller has counted won, the retirements it made. With ids,
// only a record of ids[i] is retired: one of another id (its number
// reused after Redis lost writes) is left as it is, and the error is
// ErrCountersLost once the others are retired. Without (Repair's
// records no id names), any record is. token is the marks' and claims':
// a write's own, so that the write sent again gets their first answers.
func (s *Store) retire(ctx context.Context, which []int, oldNums []uint64, oldBuckets []*redis.StringCmd, ids []string, token string) (won int, gone []uint64, _ error) {
	if len(which) == 0 {
		return 0, nil, nil
	}
	if retireHook != nil {
		retireHook("mark")
	}
	marks := make([]*redis.Cmd, len(which))
	if _, err := s.scripted(ctx, func(p redis.Pipeliner, eval evaluator) error {
		for k, i := range which {
			if ids != nil {
				marks[k] = eval(p, s.script(markScript), []string{s.docKey(oldNums[i])}, token, ids[i])
			} else {
				marks[k] = eval(p, s.script(markScript), []string{s.docKey(oldNums[i])}, token)
			}
		}
		return nil
	}); err != nil {
		return 0, nil, err
	}
	// NB: a retirement counts once (the live counter), by whoever
	// decides it: a document that does not expire by its mark, one that
	// expires by whoever removes its expiry entry, this write or the
	// sweep (which counts the entries it removes). Counted by the mark
	// alone, a document retired as its TTL ran out was counted by no one
	// (the mark met the record Redis had expired, and this write's ZREM
	// took the entry from the sweep) or by both: the live count drifted
	// by hundreds under writers racing the sweep.
	var foreign error
	var kept, byEntry []int
	for k, m := range marks {
		switch n, _ := m.Int(); n {
		case 1:
			won++
		case -1:
			i := which[k]
			foreign = fmt.Errorf("%w: id %q named document number %d, which is another id's record; it was left as it is, and the rest of the write applied; lshdb check --repair lists what the index lost (stop every writer first)", ErrCountersLost, ids[i], oldNums[i])
			continue
		default:
			byEntry = append(byEntry, len(kept))
		}
		kept = append(kept, which[k])
	}
	which = kept
	if err := crashAt(3); err != nil {
		return won, nil, err
	}
	if retireHook != nil {
		retireHook("unpost")
	}
	claims := make([]*redis.Cmd, len(which))
	if _, err := s.scripted(ctx, func(p redis.Pipeliner, eval evaluator) error {
		for k, i := range which {
			bs, _ := oldBuckets[i].Bytes()
			num := strconv.FormatUint(oldNums[i], 10)
			for band, b := range parseBuckets(bs) {
				p.SRem(ctx, s.postKey(band, b), num)
			}
			// NB: a no-op for a document that does not expire.
			claims[k] = s.claim(p, eval, token, expiryMember(oldNums[i], parseBuckets(bs)))
		}
		return nil
	}); err != nil {
		return won, nil, err
	}
	for _, k := range byEntry {
		if n, _ := claims[k].Int(); n == 1 {
			won++
		}
	}
	if err := crashAt(4); err != nil {
		return won, nil, err
	}
	for _, i := range which {
		gone = append(gone, oldNums[i])
	}
	return won, gone, foreign
}

// deleteRetired ends a retirement (retire) or a write: deletes the
// records retired, nums, the swaps keys done (of writes that are over),
// and the claims of token.
func (s *Store) deleteRetired(ctx context.Context, nums []uint64, done []string, token string) error {
	if len(nums) == 0 && len(done) == 0 {
		return nil
	}
	// NB: each key by itself: a write's swaps are on many slots, which
	// one DEL of several keys may not span in a cluster.
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, n := range nums {
			p.Del(ctx, s.docKey(n))
		}
		for _, k := range done {
			p.Del(ctx, k)
		}
		if len(nums) > 0 {
			p.Del(ctx, s.claimsKey(token))
		}
		return nil
	})
	return err
}

// pipeErr returns the first error of a pipeline's commands other than
// redis.Nil (an absent key, an answer), or err when none says more.
func pipeErr(cmds []redis.Cmder, err error) error {
	for _, c := range cmds {
		if e := c.Err(); e != nil && !errors.Is(e, redis.Nil) {
			return e
		}
	}
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

// putRecordScript writes a new record (KEYS[1]: its id ARGV[1], record
// ARGV[2], buckets ARGV[3], its expiry ARGV[4] in Unix milliseconds, 0
// for none) and returns 1, unless a record holds the key: then it writes
// nothing and returns 0, or 1 if the record is of the same id and bytes
// (Apply).
const putRecordScript = `if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('HGET', KEYS[1], 'i') == ARGV[1] and redis.call('HGET', KEYS[1], 'r') == ARGV[2] then return 1 end
  return 0
end
redis.call('HSET', KEYS[1], 'i', ARGV[1], 'r', ARGV[2], 'b', ARGV[3])
if ARGV[4] ~= '0' then redis.call('PEXPIREAT', KEYS[1], ARGV[4]) end
return 1`

// markScript marks a record retired (its field "x" set to the
// retirement's token ARGV[1]) and returns 1, if it is a record (it has an
// id) not marked yet, 2 if it is one that expires (whose retirement is
// counted by whoever removes its expiry entry); else 0 and it writes
// nothing; -1 if ARGV[2] is given and the record is of another id. A
// record marked with ARGV[1] already is this retirement's own, sent
// again: it answers as the first time. NB: HSET alone
// made a hash of the mark alone for a record another writer had deleted
// (an orphan for Repair), and could not tell which of two writers
// retiring one document did it first; and with no id to check, a put
// retired another id's document whose number Redis had given out again.
// Without the token, a mark sent again (its first answer lost) answered
// 0, and the retirement it had made was counted by no one: the live
// count stayed one too high until a repair.
const markScript = `local i = redis.call('HGET', KEYS[1], 'i')
if not i then return 0 end
if ARGV[2] and i ~= ARGV[2] then return -1 end
if redis.call('HSETNX', KEYS[1], 'x', ARGV[1]) == 0 and redis.call('HGET', KEYS[1], 'x') ~= ARGV[1] then return 0 end
if redis.call('PTTL', KEYS[1]) >= 0 then return 2 end
return 1`

// claimScript removes the expiry entry ARGV[1] from the expiry index
// (KEYS[1]) and returns 1, or 0 if it is not there; an entry that KEYS[2],
// the claims of one retirement or sweep batch, holds was removed by this
// one (sent again, its first answer lost) and answers 1 again. KEYS[2]
// is deleted when its retirement or sweep batch ends, else expires after
// claimMemory. NB: with ZREM alone, a sweep batch sent
// again found its entries gone, took them for another sweep's, and left
// their postings and their count behind until a repair.
const claimScript = `if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('SADD', KEYS[2], ARGV[1])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  return 1
end
return redis.call('SISMEMBER', KEYS[2], ARGV[1])`

// swapScript sets the id key KEYS[1] to the document number ARGV[1], or
// deletes it when ARGV[1] is empty, and returns the number it held
// before, or nil. KEYS[2] holds the swaps of one write (swapsKey), as
// they were, for ARGV[2] milliseconds: a swap this write made already
// (sent again, its first answer lost) answers what it answered then.
// NB: the swap of an id that held nothing is not kept (a fresh load
// would write a key for every document): sent again after another
// writer of the same id swapped it in between, it swaps that writer's
// number out, and retires its document. That needs a read timeout and a
// second writer of the same new id within it; check --repair finds it.
//
// NB: what it swaps out is kept first: refused (a full Redis), the script
// has changed nothing.
const swapScript = `local was = redis.call('HGET', KEYS[2], KEYS[1])
if was then return was end
local old = redis.call('GET', KEYS[1])
if old and old ~= ARGV[1] then
  redis.call('HSET', KEYS[2], KEYS[1], old)
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
if ARGV[1] == '' then
  if old then redis.call('DEL', KEYS[1]) end
else
  redis.call('SET', KEYS[1], ARGV[1])
end
return old`

// claimMemory is how long a write's swaps, or a retirement's or sweep's
// claims, are kept when the write stopped before it deleted them: far
// longer than go-redis takes to send a pipeline again.
const claimMemory = 10 * time.Minute

// claim queues claimScript on p for the expiry entry m, with the claims
// of token.
func (s *Store) claim(p redis.Pipeliner, eval evaluator, token, m string) *redis.Cmd {
	return eval(p, s.script(claimScript), []string{s.expiryKey(), s.claimsKey(token)}, m, claimMemory.Milliseconds())
}

// evaluator queues a script on a pipeline (scripted).
type evaluator func(p redis.Pipeliner, src string, keys []string, args ...any) *redis.Cmd

// scripted runs fn's pipeline with its scripts sent by their SHA1
// (EVALSHA). If a server does not know one (NOSCRIPT: restarted, failed
// over, its script cache flushed), the whole pipeline is sent again with
// the scripts' bodies (EVAL), which the servers then keep: every scripted
// pipeline may be sent twice, as go-redis may send any pipeline twice
// (its steps are idempotent, or carry their write's token).
//
// NB: with EVAL alone, a script's body went with every command: a batch
// of 2,048 documents sent about 2 MB of Lua, which the servers hashed
// again for each; fresh puts ran at 0.77x the documents per second of
// plain SET … GET, replacements at 0.70x, deletes at 0.56x (on the test
// cluster, alternated runs); by SHA1, at 0.84x, 0.76x and 0.62x (the rest
// is the tokens' work: the price of a write that go-redis may send twice).
func (s *Store) scripted(ctx context.Context, fn func(p redis.Pipeliner, eval evaluator) error) ([]redis.Cmder, error) {
	cmds, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		return fn(p, func(p redis.Pipeliner, src string, keys []string, args ...any) *redis.Cmd {
			return p.EvalSha(ctx, scriptSHA(src), keys, args...)
		})
	})
	if !slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return isNoScript(c.Err()) }) {
		return cmds, err
	}
	return s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		return fn(p, func(p redis.Pipeliner, src string, keys []string, args ...any) *redis.Cmd {
			return p.Eval(ctx, src, keys, args...)
		})
	})
}

// evalOne runs one script by its SHA1, and by its body if the server does
// not know it (scripted).
func (s *Store) evalOne(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	if c := s.c.EvalSha(ctx, scriptSHA(src), keys, args...); !isNoScript(c.Err()) {
		return c
	}
	return s.c.Eval(ctx, src, keys, args...)
}

// isNoScript reports whether err is a server's NOSCRIPT: it does not know
// the script of an EVALSHA.
func isNoScript(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "NOSCRIPT")
}

// scriptSHAs holds the SHA1 (hex) of each script body sent (scriptSHA).
var scriptSHAs sync.Map

// scriptSHA returns the SHA1 of the script src, in hex, as EVALSHA takes
// it.
func scriptSHA(src string) string {
	if v, ok := scriptSHAs.Load(src); ok {
		return v.(string)
	}
	sum := sha1.Sum([]byte(src))
	h := hex.EncodeToString(sum[:])
	scriptSHAs.Store(src, h)
	return h
}

// fixCountersScript sets the live counter to ARGV[1] and raises the
// next document number to ARGV[2] if below it; it returns 1 if it
// changed either, else 0.
const (
	fixCountersScript = `local changed = 0
if (redis.call('HGET', KEYS[1], 'live') or '') ~= ARGV[1] then redis.call('HSET', KEYS[1], 'live', ARGV[1]) changed = 1 end
if (tonumber(redis.call('HGET', KEYS[1], 'next') or '0') or -1) < tonumber(ARGV[2]) then redis.call('HSET', KEYS[1], 'next', ARGV[2]) changed = 1 end
return changed`
)

// incrScript is Sync's write, where the servers take allow-oom (script).
const incrScript = `return redis.call('INCR', KEYS[1])`

// script returns a script of a delete or a repair, flagged to run at
// maxmemory where the servers take the flag (freeAtOOM). NB: Redis
// refuses at maxmemory the first write of a script, or a command, that
// may take memory (HSETNX, HINCRBY, HSET): a delete, which frees memory,
// was refused with the rest, after its ids were gone (GETDEL is not
// refused), and a full Redis could not be emptied by lshdb, nor repaired
// of what a load stopped there left. The mark and the counter take a
// few bytes.
func (s *Store) script(src string) string {
	if s.freeAtOOM {
		return "#!lua flags=allow-oom\n" + src
	}
	return src
}

// addLive adds n to the live counter for the write or sweep token, once
// (countScript): a HINCRBY that go-redis sent again (its answer after the
// read timeout) counted twice. It runs at maxmemory when n frees (a
// delete, a sweep).
//
// finished are the marks of writes that are over (Finished), deleted by
// the same script: they are on the counters' slot.
func (s *Store) addLive(ctx context.Context, n int64, token string, finished ...string) redis.Cmder {
	src := countScript
	if n <= 0 {
		// NB: a count that frees, or adds nothing (its mark alone: a
		// write of replacements), runs at maxmemory too.
		src = s.script(src)
	}
	return s.evalOne(ctx, src, append([]string{s.countersKey(), s.countedKey(token)}, finished...), n, countedMemory.Milliseconds())
}

// countScript adds ARGV[1] to the live counter (KEYS[1]) unless KEYS[2],
// its write's mark, says it did already; the mark is kept ARGV[2]
// milliseconds. It deletes the marks KEYS[3:] of writes that are over,
// and returns the count.
const countScript = `for i = 3, #KEYS do redis.call('DEL', KEYS[i]) end
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[2]) then
  return redis.call('HINCRBY', KEYS[1], 'live', ARGV[1])
end
return tonumber(redis.call('HGET', KEYS[1], 'live'))`

// countedMemory is how long a write's mark that it counted is kept (a key
// of a few bytes for each write) unless the write says it is over
// (Finished): longer than go-redis takes to send a command again, and
// than a write is sent again as itself (resumeWithin).
const countedMemory = 10 * time.Minute

// countedKey names the mark of the write token that it counted
// (countScript), on the counters' slot.
func (s *Store) countedKey(token string) string {
	return "{" + strings.TrimSuffix(s.prefix, ":") + "}:counted:" + token
}

func bucketBytes(bs []uint64) []byte {
	out := make([]byte, 0, 8*len(bs))
	for _, b := range bs {
		out = binary.LittleEndian.AppendUint64(out, b)
	}
	return out
}

func parseBuckets(b []byte) []uint64 {
	out := make([]uint64, len(b)/8)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return out
}

// BandBucket names a posting list.
type BandBucket struct {
	Band   int
	Bucket uint64
}

// Postings returns the doc numbers of each posting list, in one round
// trip per node, as stored: a number whose record is missing or deleted
// may be among them (Records says so).
func (s *Store) Postings(ctx context.Context, lists []BandBucket) ([][]uint64, error) {
	cmds := make([]*redis.StringSliceCmd, len(lists))
	if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, l := range lists {
			cmds[i] = p.SMembers(ctx, s.postKey(l.Band, l.Bucket))
		}
		return nil
	}); err != nil {
		return nil, err
	}
	out := make([][]uint64, len(lists))
	for i, c := range cmds {
		for _, v := range c.Val() {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%w: posting list %s holds %q", ErrForeignValue, s.postKey(lists[i].Band, lists[i].Bucket), v)
			}
			out[i] = append(out[i], n)
		}
	}
	return out, nil
}

// Records returns the record of each doc number, in one round trip per
// node: nil for a number whose record is missing or marked deleted.
func (s *Store) Records(ctx context.Context, nums []uint64) ([][]byte, error) {
	cmds := make([]*redis.SliceCmd, len(nums))
	if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range nums {
			cmds[i] = p.HMGet(ctx, s.docKey(n), "r", "x")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	out := make([][]byte, len(nums))
	for i, c := range cmds {
		v := c.Val()
		if len(v) == 2 && v[0] != nil && v[1] == nil {
			if r, ok := v[0].(string); ok {
				out[i] = []byte(r)
			}
		}
	}
	return out, nil
}

// RecordsAndBuckets is Records with each record's band buckets (nil with
// a nil record), as Apply stored them with it.
func (s *Store) RecordsAndBuckets(ctx context.Context, nums []uint64) ([][]byte, [][]uint64, error) {
	cmds := make([]*redis.SliceCmd, len(nums))
	if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range nums {
			cmds[i] = p.HMGet(ctx, s.docKey(n), "r", "x", "b")
		}
		return nil
	}); err != nil {
		return nil, nil, err
	}
	recs, buckets := make([][]byte, len(nums)), make([][]uint64, len(nums))
	for i, c := range cmds {
		v := c.Val()
		if len(v) == 3 && v[0] != nil && v[1] == nil {
			r, ok1 := v[0].(string)
			b, ok2 := v[2].(string)
			if ok1 && ok2 {
				recs[i], buckets[i] = []byte(r), parseBuckets([]byte(b))
			}
		}
	}
	return recs, buckets, nil
}

// DocNums returns the doc number of each id, 0 for an id not stored.
func (s *Store) DocNums(ctx context.Context, ids []string) ([]uint64, error) {
	cmds := make([]*redis.StringCmd, len(ids))
	if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.Get(ctx, s.idKey(id))
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]uint64, len(ids))
	for i, c := range cmds {
		// NB: Pipelined returns the first command's error only: a later
		// command's failure behind a missing id (redis.Nil) must not read
		// as another missing id.
		n, err := c.Uint64()
		if ne := (*strconv.NumError)(nil); errors.As(err, &ne) {
			return nil, fmt.Errorf("%w: id key %s holds %q", ErrForeignValue, s.idKey(ids[i]), c.Val())
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// Count returns the number of documents stored, or ErrCountersGone where
// the counters are (see Counters).
func (s *Store) Count(ctx context.Context) (uint64, error) {
	_, n, err := s.Counters(ctx)
	return n, err
}

// Counters returns, in one read, the last doc number handed out (the
// documents ever written) and the number of documents stored; or
// ErrCountersGone where the counters are gone (a writable handle makes
// them at its open: MarkCounters), which Repair puts back. NB: it
// counted 0 documents, and info and stats said 0 of an index that held
// them (an operator's review, R8).
func (s *Store) Counters(ctx context.Context) (written, live uint64, err error) {
	vs, err := s.c.HMGet(ctx, s.countersKey(), "next", "live", "index").Result()
	if err != nil {
		return 0, 0, err
	}
	if vs[0] == nil && vs[1] == nil && vs[2] == nil {
		return 0, 0, fmt.Errorf("%w (%s holds nothing)", ErrCountersGone, s.countersKey())
	}
	vs = vs[:2]
	out := [2]uint64{}
	for i, v := range vs {
		if str, ok := v.(string); ok {
			n, err := strconv.ParseInt(str, 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("%w: counter %q: %w", ErrForeignValue, str, err)
			}
			out[i] = uint64(max(n, 0)) // NB: see Count
		}
	}
	return out[0], out[1], nil
}

// scanKeys calls fn with every key matching pattern, on every master
// (the masters are scanned at once; fn is called one key at a time).
func (s *Store) scanKeys(ctx context.Context, pattern string, fn func(key string) error) error {
	return s.scanPages(ctx, pattern, func(_ *redis.Client, keys []string) error {
		for _, k := range keys {
			if err := fn(k); err != nil {
				return err
			}
		}
		return nil
	})
}

// scanPages calls fn with every key matching pattern, a page (one SCAN
// reply, up to about a thousand keys) at a time, with the client of the
// master that holds them: fn reads or changes a page in one pipeline, a
// round trip, instead of one per key (Check and Repair of 10,000
// documents took 13 s each with a command per posting list). The masters
// are scanned at once; fn is called one page at a time.
func (s *Store) scanPages(ctx context.Context, pattern string, fn func(c *redis.Client, keys []string) error) error {
	var mu sync.Mutex
	each := func(ctx context.Context, c *redis.Client) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, pattern, 1000).Result()
			if err != nil {
				return err
			}
			if len(keys) > 0 {
				mu.Lock()
				err = fn(c, keys)
				mu.Unlock()
				if err != nil {
					return err
				}
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	}
	return s.eachMaster(ctx, each)
}

// eachMaster calls fn with the client of every master at once (of the
// one server, on a single-server index).
func (s *Store) eachMaster(ctx context.Context, fn func(context.Context, *redis.Client) error) error {
	if cc, ok := s.c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, fn)
	}
	return fn(ctx, s.c.(*redis.Client))
}

// cmdsOf sends cmd for each key on c in one pipeline and returns the
// replies, each with its own error (redis.Nil for a key that is gone).
func cmdsOf[C redis.Cmder](ctx context.Context, c redis.Cmdable, keys []string, cmd func(p redis.Pipeliner, key string) C) ([]C, error) {
	cmds := make([]C, len(keys))
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = cmd(p, k)
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	return cmds, nil
}

// membersOf reads the sets keys on c in one pipeline.
func membersOf(ctx context.Context, c *redis.Client, keys []string) ([][]string, error) {
	cmds := make([]*redis.StringSliceCmd, len(keys))
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.SMembers(ctx, k)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	out := make([][]string, len(keys))
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}

// RepairReport says what Repair found and removed.
type RepairReport struct {
	// Orphans are records that no id names (a put that stopped before
	// its id was written, or a retirement that stopped before the record
	// was deleted); Dangling the postings of numbers with no live record,
	// and the expiry entries not yet due of numbers with no record;
	// Reposted the postings a live document was missing (a put whose
	// postings and id went to their nodes at once, stopped after the id
	// landed and before all its postings had), added again.
	Orphans, Dangling, Reposted int
	// Lost are the ids that named no live record (its record gone: a
	// key evicted or deleted by hand, a write lost with its node),
	// removed: their documents are gone and must be put again.
	Lost []string
	// Unnamed are the ids of the Orphans that no id key named at all,
	// in order: writes that stopped before their id (never
	// acknowledged), or the older copy of a replaced document that was
	// then deleted. If they should be stored, put them again.
	Unnamed []string
	// Restored are the records no id key named, given their id back (the
	// latest record of each id: RepairOptions.RestoreIDs): those
	// documents are kept.
	Restored int
	// Unrestored are the ids of records no id key named that were left
	// as they are (no id, no postings), in order: Redis lost writes
	// (LostWrites) and RestoreIDs was not set, or it was and Redis, at
	// its maxmemory, had no room for their ids and postings.
	Unrestored []string
	// LostWrites says that Redis lost writes: an id key named a record
	// that is gone, or the counters were gone or behind the records'
	// numbers (a master that came back empty, a key evicted), in this
	// repair or in one before it that left records unrestored (a field
	// of the counters keeps it). Looked for only where records have no
	// id key.
	LostWrites bool
	// Counters says that the counters were put right: the live count
	// differed from the live documents', or the next document number was
	// not past every record's (Redis lost writes: the numbers would be
	// given out again).
	Counters bool
}

// unnameScript deletes an id key (KEYS[1]) if it still names doc number
// ARGV[1], and returns 1; else 0.
const unnameScript = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`

// RepairOptions are RepairWith's.
type RepairOptions struct {
	// RestoreIDs gives a record whose id has no key its id back (the
	// latest record of each id), where it is removed, or left as it is
	// where Redis lost writes: for an index whose Redis lost keys. A
	// document deleted since may come back (the older copy of a document
	// replaced and then deleted has no id key either).
	RestoreIDs bool
	// RemoveUnnamed removes every record whose id has no key (but the
	// documents awaiting the sweep), where Redis lost writes too: for an
	// index whose documents are put again from their inputs.
	RemoveUnnamed bool
}

// Repair is RepairWith with no options.
func (s *Store) Repair(ctx context.Context) (RepairReport, error) {
	return s.RepairWith(ctx, RepairOptions{})
}

// RepairWith mends what an Apply that stopped part way left: it removes
// records no id names (with their postings), or leaves them where Redis
// lost writes, or gives them their id back (RestoreIDs); postings whose record is
// missing or deleted, and adds again a live document's postings that are
// missing; and ids that name no live record (what a lost record leaves),
// listed in Lost. It must not run beside writers (as db's check --repair).
func (s *Store) RepairWith(ctx context.Context, o RepairOptions) (RepairReport, error) {
	var rep RepairReport
	live := map[uint64]bool{}
	keep := map[uint64]bool{} // records left as they are (Unrestored)
	// Documents that expired and await the sweep are the sweep's: their
	// records, ids and postings are left to it, and they count until it
	// runs, as Check counts them.
	//
	// NB: a repair of a clean index holding some set the live count to
	// the ids' alone; the sweep then took them off it a second time.
	due, err := s.dueForSweep(ctx)
	if bad := (badExpiryMembers{}); err != nil && !errors.As(err, &bad) {
		return rep, err // NB: members that do not parse are Check's to report
	}
	var docKeys []string
	if err := s.scanKeys(ctx, s.docPattern(), func(key string) error {
		docKeys = append(docKeys, key)
		return nil
	}); err != nil {
		return rep, err
	}
	// A record is live when its id names it and it is not marked.
	nums := make([]uint64, len(docKeys))
	for i, k := range docKeys {
		n, err := strconv.ParseUint(strings.TrimPrefix(k, s.prefix+"d:"), 10, 64)
		if err != nil {
			return rep, fmt.Errorf("%w: a record key %q names no document number", ErrForeignValue, k)
		}
		nums[i] = n
	}
	cmds := make([]*redis.SliceCmd, len(nums))
	if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range nums {
			cmds[i] = p.HMGet(ctx, s.docKey(n), "i", "x", "b")
		}
		return nil
	}); err != nil {
		return rep, err
	}
	var ids []string
	var idOf []int
	for i, c := range cmds {
		if v := c.Val(); len(v) == 3 && v[1] == nil {
			if id, ok := v[0].(string); ok {
				ids = append(ids, id)
				idOf = append(idOf, i)
			}
		}
	}
	named, err := s.DocNums(ctx, ids)
	if err != nil {
		return rep, err
	}
	unnamed := map[uint64]string{}             // doc number → id, of records whose id has no key
	idAt := make(map[uint64]string, len(idOf)) // doc number → id, of records not marked
	for k, i := range idOf {
		idAt[nums[i]] = ids[k]
		if named[k] == nums[i] {
			live[nums[i]] = true
		} else if named[k] == 0 {
			unnamed[nums[i]] = ids[k]
		}
	}
	// NB: read again once the records are read, and taken with the first
	// reading: a document whose expiry passed while the scan ran (minutes,
	// on a large index) had no record by then, and was in neither.
	if more, err := s.dueForSweep(ctx); err == nil || errors.As(err, new(badExpiryMembers)) {
		for n := range more {
			due[n] = true
		}
	} else {
		return rep, err
	}
	// Records whose id has no key at all: a write that stopped before
	// its id (never acknowledged: it may land or not), the older copy of
	// a document replaced and then deleted (a replace stopped after its
	// id moved leaves the old record unmarked; once the id is deleted no
	// key names it), or an id key Redis lost (evicted, lost with a node
	// that failed before its replica had it). No record tells which.
	// Removed, the documents whose id key Redis lost were lost with it
	// (after a master came back empty a repair removed 3,835 of them
	// beside the 3,810 whose record was gone: an operator's review, R1);
	// given their id back, a deleted document came back (a maintainer's
	// review). So: given back only when asked (RestoreIDs, the latest
	// record of each id); else left as they are where Redis shows that
	// it lost writes (lostWrites), for the caller to choose; else
	// removed.
	hasRecord := make(map[uint64]bool, len(nums))
	for _, n := range nums {
		hasRecord[n] = true
	}
	var restored map[uint64]string
	if len(unnamed) > 0 {
		lost, err := s.lostWrites(ctx, nums, hasRecord, due)
		if err != nil {
			return rep, err
		}
		rep.LostWrites = lost
		var kept map[uint64]bool
		switch {
		case o.RestoreIDs:
			if restored, kept, err = s.restoreIDs(ctx, unnamed, due); err != nil {
				return rep, err
			}
		case lost && !o.RemoveUnnamed:
			kept = make(map[uint64]bool, len(unnamed))
			for n := range unnamed {
				if !due[n] {
					kept[n] = true
				}
			}
		}
		for n := range kept {
			keep[n] = true
			rep.Unrestored = append(rep.Unrestored, unnamed[n])
		}
		slices.Sort(rep.Unrestored)
		rep.Unrestored = slices.Compact(rep.Unrestored)
	}
	restoredIDs := make(map[string]bool, len(restored))
	for n, id := range restored {
		live[n] = true
		restoredIDs[id] = true
	}
	rep.Restored = len(restored)
	var dead []int
	deadNums := make([]uint64, len(nums))
	deadBuckets := make([]*redis.StringCmd, len(nums))
	if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range nums {
			if !live[n] && !due[n] && !keep[n] {
				dead = append(dead, i)
				deadNums[i] = n
				deadBuckets[i] = p.HGet(ctx, s.docKey(n), "b")
			}
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return rep, err
	}
	rep.Orphans = len(dead)
	for _, i := range dead {
		// NB: an older copy of an id given back to a later record is no
		// document to put again.
		if id, ok := unnamed[nums[i]]; ok && !restoredIDs[id] {
			rep.Unnamed = append(rep.Unnamed, id)
		}
	}
	// NB: sorted, then each id once (two stale copies of one id): a
	// search of the list per record was quadratic in the orphans.
	slices.Sort(rep.Unnamed)
	rep.Unnamed = slices.Compact(rep.Unnamed)
	token := rand.Text()
	_, gone, err := s.retire(ctx, dead, deadNums, deadBuckets, nil, token)
	if err == nil {
		err = s.deleteRetired(ctx, gone, nil, token)
	}
	if err != nil {
		return rep, err
	}
	// The live count is the ids'. NB: at maxmemory too (freeAtOOM): a
	// repair of what a load stopped by a full Redis left frees memory.
	awaiting := 0
	for n := range due {
		if !live[n] {
			awaiting++
		}
	}
	// NB: and the next number past every record's: after Redis lost
	// writes (the counters' among them) it gave out numbers that records
	// still held, and a later put wrote over another id's document.
	maxNum := uint64(0)
	for _, n := range nums {
		maxNum = max(maxNum, n)
	}
	// NB: and past every expiry entry's (the due ones' among them), of
	// which those not yet due whose record is gone are removed: lost with
	// the counters, an entry
	// kept on another node had the sweep, once it came due, delete the
	// record of a document given its number again (and take one off the
	// live count).
	members, err := s.c.ZRange(ctx, s.expiryKey(), 0, -1).Result()
	if err != nil {
		return rep, err
	}
	var stale []any
	for _, m := range members {
		n, _, err := parseExpiryMember(m)
		if err != nil {
			// NB: an entry no write makes (by hand, another program):
			// removed, as the sweep, which leaves it, returned its error
			// on every run after the first of its batches.
			stale = append(stale, m)
			continue
		}
		maxNum = max(maxNum, n)
		if !hasRecord[n] && !due[n] {
			stale = append(stale, m)
		}
	}
	if len(stale) > 0 {
		if err := s.c.ZRem(ctx, s.expiryKey(), stale...).Err(); err != nil {
			return rep, err
		}
		rep.Dangling += len(stale)
	}
	changed, err := s.c.Eval(ctx, s.script(fixCountersScript), []string{s.countersKey()}, len(live)+awaiting, maxNum).Int()
	if err != nil {
		return rep, err
	}
	rep.Counters = changed == 1
	// NB: a script, flagged to run at maxmemory (where records were left
	// for want of room); nothing left unrestored: the field is removed.
	if err := s.c.Eval(ctx, s.script(lostWritesScript), []string{s.countersKey()}, len(rep.Unrestored) > 0).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return rep, err
	}
	if s.mark != "" {
		// NB: counters lost and made again by the repair hold no mark,
		// and every handle's puts would be refused.
		if _, err := s.MarkCounters(ctx, s.mark, true); err != nil {
			return rep, err
		}
	}
	// Every live document in each of its buckets: a query missed a
	// document that a kill left out of some of its bands, and Check
	// reported what Repair could not mend.
	// NB: asked first (SISMEMBER reads), and only what is missing added:
	// SADD is refused at maxmemory even of a member the set holds, so a
	// repair of a full Redis failed here, after its removals, with every
	// step after this one skipped (an operator's review, RD1).
	type posting struct {
		key string
		num string
	}
	var asked []posting
	var held []*redis.BoolCmd
	if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range nums {
			if !live[n] {
				continue
			}
			bs, _ := cmds[i].Val()[2].(string)
			for band, b := range parseBuckets([]byte(bs)) {
				ps := posting{s.postKey(band, b), strconv.FormatUint(n, 10)}
				asked = append(asked, ps)
				held = append(held, p.SIsMember(ctx, ps.key, ps.num))
			}
		}
		return nil
	}); err != nil {
		return rep, err
	}
	var missing []posting
	for i, c := range held {
		if !c.Val() {
			missing = append(missing, asked[i])
		}
	}
	asked, held = nil, nil
	if len(missing) > 0 {
		var added []*redis.IntCmd
		if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, ps := range missing {
				added = append(added, p.SAdd(ctx, ps.key, ps.num))
			}
			return nil
		}); err != nil {
			return rep, err
		}
		for _, c := range added {
			rep.Reposted += int(c.Val())
		}
	}
	// Ids that name no live record. NB: the record is gone, or another
	// id's, or marked deleted, and no write mends that: Check reported
	// it after every repair, and the live count (the records') was not
	// the ids'. The id is removed if it still names that number. NB: a
	// live record is one its own id names: an id that names another id's
	// record (a number given out again after Redis lost the counters,
	// when the first id's key survived on another node and its record did
	// not) was kept, and Check failed after every repair; Scan gave that
	// record twice, and pairs paired it with itself.
	if err := s.scanPages(ctx, s.prefix+"i:*", func(c *redis.Client, keys []string) error {
		vals, err := cmdsOf(ctx, c, keys, func(p redis.Pipeliner, k string) *redis.StringCmd { return p.Get(ctx, k) })
		if err != nil {
			return err
		}
		dels := make([]*redis.Cmd, len(keys)) // NB: nil for an id kept
		if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range keys {
				n, err := vals[i].Uint64()
				if errors.Is(err, redis.Nil) {
					continue // deleted since the scan listed it
				}
				if err == nil && (live[n] && idAt[n] == strings.TrimPrefix(k, s.prefix+"i:") || due[n]) {
					continue
				}
				dels[i] = p.Eval(ctx, s.script(unnameScript), []string{k}, vals[i].Val())
			}
			return nil
		}); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		for i, d := range dels {
			if d != nil {
				if n, _ := d.Int(); n == 1 {
					rep.Lost = append(rep.Lost, strings.TrimPrefix(keys[i], s.prefix+"i:"))
				}
			}
		}
		return nil
	}); err != nil {
		return rep, err
	}
	slices.Sort(rep.Lost)
	// Postings of numbers with no live record.
	err = s.scanPages(ctx, s.postingPattern(), func(c *redis.Client, keys []string) error {
		members, err := membersOf(ctx, c, keys)
		if err != nil {
			return err
		}
		_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, ms := range members {
				for _, m := range ms {
					if n, err := strconv.ParseUint(m, 10, 64); err != nil || !live[n] && !due[n] {
						p.SRem(ctx, keys[i], m)
						rep.Dangling++
					}
				}
			}
			return nil
		})
		return err
	})
	return rep, err
}

// restoreIDs gives each id of unnamed (doc number → the id its record
// names, of records whose id has no key) back to its latest record (the
// highest number), unless the document awaits the sweep (due): the id key
// is set only if it is still missing, and with the record's own expiry,
// if it has one. It returns the records given their id, and those to be
// given it that Redis had no room for (kept as they are).
func (s *Store) restoreIDs(ctx context.Context, unnamed map[uint64]string, due map[uint64]bool) (restored map[uint64]string, kept map[uint64]bool, _ error) {
	latest := make(map[string]uint64)
	for n, id := range unnamed {
		if !due[n] && n > latest[id] {
			latest[id] = n
		}
	}
	if len(latest) == 0 {
		return nil, nil, nil
	}
	// NB: at maxmemory (noeviction) each record given its id takes an id
	// key and its postings (restoreCost each, on every master): Redis
	// refused the postings, and the repair failed. Without room they are
	// kept as they are, not removed: they are documents Redis lost the
	// ids of, which the user may have no input left to put again (a
	// maintainer's review).
	room, limited, err := s.memoryRoom(ctx)
	if err != nil {
		return nil, nil, err
	}
	if limited && room < int64(len(latest))*restoreCost {
		kept = make(map[uint64]bool, len(latest))
		for _, n := range latest {
			kept[n] = true
		}
		return nil, kept, nil
	}
	ids := slices.Sorted(maps.Keys(latest))
	ttls := make([]*redis.DurationCmd, len(ids))
	if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			ttls[i] = p.PTTL(ctx, s.docKey(latest[id]))
		}
		return nil
	}); err != nil {
		return nil, nil, err
	}
	sets := make([]*redis.StatusCmd, len(ids))
	if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			ttl := ttls[i].Val()
			switch {
			case ttl == -2 || ttl == 0:
				continue // NB: the record is gone since (expired), or going
			case ttl > 0:
				sets[i] = p.SetArgs(ctx, s.idKey(id), latest[id], redis.SetArgs{Mode: "NX", TTL: ttl})
			default:
				sets[i] = p.SetArgs(ctx, s.idKey(id), latest[id], redis.SetArgs{Mode: "NX"})
			}
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) && !OutOfMemory(err) {
		return nil, nil, err
	}
	restored = make(map[uint64]string)
	for i, c := range sets {
		switch {
		case c == nil:
		case c.Err() == nil:
			restored[latest[ids[i]]] = ids[i]
		case OutOfMemory(c.Err()):
			// NB: Redis filled anyway (see above): kept as it is.
			if kept == nil {
				kept = map[uint64]bool{}
			}
			kept[latest[ids[i]]] = true
		case errors.Is(c.Err(), redis.Nil):
			// NB: the id key is there now (a writer beside the repair,
			// which it must not have): the record stays an orphan.
		default:
			return nil, nil, c.Err()
		}
	}
	return restored, kept, nil
}

// lostWritesField is the counters' field that a repair which left records
// unrestored sets (to "1"), so that the repairs after it leave them too
// (LostWrites): that one removed the ids whose record was gone, and put
// the counters right, the signs lostWrites looks for, and a repair after
// it removed the records it had left (a maintainer's review).
const lostWritesField = "lostwrites"

// lostWritesScript sets lostWritesField of the counters (KEYS[1]) where
// ARGV[1] is 1, else removes it.
const lostWritesScript = `if ARGV[1] == '1' then return redis.call('HSET', KEYS[1], '` + lostWritesField + `', '1') end return redis.call('HDEL', KEYS[1], '` + lostWritesField + `')`

// errLostWrites stops lostWrites' scan at its first sign.
var errLostWrites = errors.New("rediskv: Redis lost writes")

// lostWrites reports whether Redis shows that it lost writes: counters
// gone or behind the records' numbers (nums), or an id key that names a
// number with no record (hasRecord) that is not awaiting the sweep (due).
// No write of lshdb's leaves either: a record is written before its id,
// and an id deleted before its record.
func (s *Store) lostWrites(ctx context.Context, nums []uint64, hasRecord, due map[uint64]bool) (bool, error) {
	vs, err := s.c.HMGet(ctx, s.countersKey(), "next", lostWritesField).Result()
	if err != nil {
		return false, err
	}
	if v, _ := vs[1].(string); v == "1" {
		return true, nil // NB: said by a repair before this one
	}
	nv, _ := vs[0].(string)
	next, err := strconv.ParseUint(nv, 10, 64)
	if err != nil {
		return true, nil // NB: the counters gone (or not lshdb's)
	}
	for _, n := range nums {
		if n > next {
			return true, nil
		}
	}
	err = s.scanPages(ctx, s.prefix+"i:*", func(c *redis.Client, keys []string) error {
		vals, err := cmdsOf(ctx, c, keys, func(p redis.Pipeliner, k string) *redis.StringCmd { return p.Get(ctx, k) })
		if err != nil {
			return err
		}
		var gone []string // ids naming no record
		for i, v := range vals {
			if n, err := v.Uint64(); err == nil && !hasRecord[n] && !due[n] {
				gone = append(gone, keys[i])
			}
		}
		if len(gone) == 0 {
			return nil
		}
		// NB: an id with a TTL is no sign: the sweep deletes a record
		// by the client's clock and leaves its id to its TTL, which
		// runs out by Redis's; a client clock ahead leaves such ids for
		// as long as it is ahead (a maintainer's review).
		ttls, err := cmdsOf(ctx, c, gone, func(p redis.Pipeliner, k string) *redis.DurationCmd { return p.PTTL(ctx, k) })
		if err != nil {
			return err
		}
		for _, t := range ttls {
			if t.Val() == -1 {
				return errLostWrites
			}
		}
		return nil
	})
	if errors.Is(err, errLostWrites) {
		return true, nil
	}
	return false, err
}

// restoreCost is what restoreIDs counts a record given its id back may
// take of a server's memory: its id key, and its postings, one a band
// (a set member each, some of them new sets), with room to spare.
const restoreCost = 4 << 10

// memoryRoom returns the least room any master has below its maxmemory,
// and whether any has one (INFO memory; a server that does not answer is
// an error: the repair stops, where it counted as having no room, and the
// records were removed).
func (s *Store) memoryRoom(ctx context.Context) (room int64, limited bool, _ error) {
	var mu sync.Mutex
	room = math.MaxInt64
	err := s.eachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		r, lim, err := memoryRoomOf(ctx, c)
		if NoRights(err) {
			return fmt.Errorf("giving ids back reads INFO memory of every master, to know whether Redis has room (grant the user +info): %w", err)
		}
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if lim {
			limited = true
			room = min(room, r)
		}
		return nil
	})
	return room, limited, err
}

// memoryRoomOf returns maxmemory less used_memory of one server, and
// whether it has a maxmemory.
func memoryRoomOf(ctx context.Context, c *redis.Client) (int64, bool, error) {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, false, err
	}
	var used, maxMem int64
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			used, _ = strconv.ParseInt(v, 10, 64)
		} else if v, ok := strings.CutPrefix(line, "maxmemory:"); ok {
			maxMem, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if maxMem == 0 {
		return 0, false, nil
	}
	return maxMem - used, true, nil
}

// badExpiryMembers are the expiry set's members that did not parse.
type badExpiryMembers []string

func (b badExpiryMembers) Error() string { return strings.Join(b, "; ") }

// dueForSweep returns the doc numbers of the documents whose expiry has
// passed, as the expiry set has them: the sweep's to remove. Members that
// do not parse are left out, and named in a badExpiryMembers error
// returned with the rest.
func (s *Store) dueForSweep(ctx context.Context) (map[uint64]bool, error) {
	due := map[uint64]bool{}
	members, err := s.c.ZRangeByScore(ctx, s.expiryKey(), &redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(time.Now().UnixMilli(), 10)}).Result()
	if err != nil {
		return nil, err
	}
	var bad badExpiryMembers
	for _, m := range members {
		n, _, err := parseExpiryMember(m)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		due[n] = true
	}
	if bad != nil {
		return due, bad
	}
	return due, nil
}

// CheckReport is what Check counted and found.
type CheckReport struct {
	IDs, Records, Lists, Postings int
	// Problems are the inconsistencies, none when the index is whole.
	Problems []string
}

// Check returns the index's inconsistencies, none when it is whole: an
// id naming no record, a record of another id, or a deleted one; a
// record no id names; a posting of a number no id names; a live document missing from one of
// its buckets; a live count that is not the ids'; with bands > 0, a
// record whose bucket list is not one bucket a band (written by a handle
// of other parameters: one opened before the index was dropped and made
// again under its name, whose documents no query finds). It reads
// everything; run it without writers.
func (s *Store) Check(ctx context.Context, bands int) (*CheckReport, error) {
	rep := &CheckReport{}
	var problems []string
	defer func() { rep.Problems = problems }()
	idNum := map[string]uint64{}
	if err := s.scanPages(ctx, s.prefix+"i:*", func(c *redis.Client, keys []string) error {
		cmds, err := cmdsOf(ctx, c, keys, func(p redis.Pipeliner, k string) *redis.StringCmd { return p.Get(ctx, k) })
		if err != nil {
			return err
		}
		for i, key := range keys {
			n, err := cmds[i].Uint64()
			if errors.Is(err, redis.Nil) {
				continue // deleted since the scan listed it
			}
			if err != nil {
				problems = append(problems, fmt.Sprintf("id key %s: %v", key, err))
				continue
			}
			idNum[strings.TrimPrefix(key, s.prefix+"i:")] = n
		}
		return nil
	}); err != nil {
		return nil, err
	}
	// NB: the records, then the postings they need, in one pipeline each
	// (a round trip per node), not a round trip per document.
	ids := slices.Sorted(maps.Keys(idNum))
	recs := make([]*redis.SliceCmd, len(ids))
	if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			recs[i] = p.HMGet(ctx, s.docKey(idNum[id]), "i", "x", "b")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	type need struct {
		id       string
		n        uint64
		band     int
		bucket   uint64
		isMember *redis.BoolCmd
	}
	var needs []need
	live := map[uint64]bool{}
	for i, id := range ids {
		n, v := idNum[id], recs[i].Val()
		rid, _ := v[0].(string)
		switch {
		case v[0] == nil:
			problems = append(problems, fmt.Sprintf("id %q names doc %d, which has no record", id, n))
			continue
		case rid != id:
			problems = append(problems, fmt.Sprintf("id %q names doc %d, the record of %q", id, n, rid))
			continue
		case v[1] != nil:
			problems = append(problems, fmt.Sprintf("id %q names doc %d, which is marked deleted", id, n))
			continue
		}
		live[n] = true
		bs, _ := v[2].(string)
		buckets := parseBuckets([]byte(bs))
		if bands > 0 && len(buckets) != bands {
			problems = append(problems, fmt.Sprintf("id %q names doc %d, whose record lists %d buckets where the index has %d bands (written by a handle of other parameters, opened before the index was made again under its name: no query finds it; put it again)", id, n, len(buckets), bands))
		}
		for band, b := range buckets {
			needs = append(needs, need{id: id, n: n, band: band, bucket: b})
		}
	}
	if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range needs {
			needs[i].isMember = p.SIsMember(ctx, s.postKey(needs[i].band, needs[i].bucket), strconv.FormatUint(needs[i].n, 10))
		}
		return nil
	}); err != nil {
		return nil, err
	}
	for _, nd := range needs {
		if !nd.isMember.Val() {
			problems = append(problems, fmt.Sprintf("doc %d (%q) is missing from band %d bucket %x", nd.n, nd.id, nd.band, nd.bucket))
		}
	}
	// Documents that expired and await the sweep: their postings (and,
	// until Redis expires them, their records) are no problem.
	due, err := s.dueForSweep(ctx)
	if err != nil {
		var bad badExpiryMembers
		if !errors.As(err, &bad) {
			return nil, err
		}
		problems = append(problems, bad...)
	}
	if err := s.scanKeys(ctx, s.docPattern(), func(key string) error {
		rep.Records++
		if n, err := strconv.ParseUint(strings.TrimPrefix(key, s.prefix+"d:"), 10, 64); err == nil && due[n] {
			return nil
		}
		if n, err := strconv.ParseUint(strings.TrimPrefix(key, s.prefix+"d:"), 10, 64); err != nil || !live[n] {
			problems = append(problems, fmt.Sprintf("record %s: no id names it (a write or delete stopped part way)", key))
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := s.scanPages(ctx, s.postingPattern(), func(c *redis.Client, keys []string) error {
		members, err := membersOf(ctx, c, keys)
		if err != nil {
			return err
		}
		for i, ms := range members {
			rep.Lists++
			rep.Postings += len(ms)
			for _, m := range ms {
				if n, err := strconv.ParseUint(m, 10, 64); err != nil || !live[n] && !due[n] {
					problems = append(problems, fmt.Sprintf("posting list %s names %s, no live document", keys[i], m))
				}
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	// NB: an expired document is counted until the sweep, its id maybe
	// not (Redis expires it).
	gone := 0
	for n := range due {
		if !live[n] {
			gone++
		}
	}
	if n, err := s.Count(ctx); errors.Is(err, ErrCountersGone) {
		problems = slices.Insert(problems, 0, "the counters are gone (lost with a restart without persistence, or evicted): the documents cannot be counted")
	} else if err != nil {
		return nil, err
	} else if n != uint64(len(idNum)+gone) {
		// NB: first: a report cut at its first problems (the command
		// shows 100) did not show it after a failover's leftovers.
		problems = slices.Insert(problems, 0, fmt.Sprintf("the live count is %d, the ids %d (and %d expired documents await the sweep)", n, len(idNum), gone))
	}
	rep.IDs = len(idNum)
	return rep, nil
}

// Flush deletes every key of the index and returns how many it deleted
// (for tests and Drop).
func (s *Store) Flush(ctx context.Context) (int64, error) {
	var n int64
	// NB: the manifest first, so that a reader that opens the index
	// meanwhile finds no index rather than part of one, and its copies
	// before it (the scan of the index's prefix does not find them: their
	// hash tags begin them), so that no reader puts it back from them.
	for _, k := range append(s.manifestCopyKeys(), s.manifestKey()) {
		m, err := s.c.Del(ctx, k).Result()
		if err != nil {
			return n, err
		}
		n += m
	}
	if err := s.scanPages(ctx, s.prefix+"*", func(c *redis.Client, keys []string) error {
		dels, err := cmdsOf(ctx, c, keys, func(p redis.Pipeliner, k string) *redis.IntCmd { return p.Del(ctx, k) })
		if err != nil {
			return err
		}
		for _, d := range dels {
			n += d.Val()
		}
		return nil
	}); err != nil {
		return n, err
	}
	// NB: the tokens' keys of the last minutes' writes, retirements and
	// sweeps (claimsKey, swapsKey, countedKey) would expire by
	// themselves; they are not counted.
	for _, pattern := range []string{"{" + s.expiryKey() + "}:claims:*", "*}" + s.prefix + "swaps:*", s.countedKey("*")} {
		if err := s.scanPages(ctx, pattern, func(c *redis.Client, keys []string) error {
			_, err := cmdsOf(ctx, c, keys, func(p redis.Pipeliner, k string) *redis.IntCmd { return p.Del(ctx, k) })
			return err
		}); err != nil {
			return n, err
		}
	}
	m, err := s.c.Del(ctx, s.countersKey()).Result()
	return n + m, err
}

// IDNum is a stored id and its doc number.
type IDNum struct {
	ID  string
	Num uint64
}

// Live returns every stored id with its doc number, by doc number (the
// order of insertion). It scans the id keys of every master.
func (s *Store) Live(ctx context.Context) ([]IDNum, error) {
	var ids []string
	if err := s.scanKeys(ctx, s.prefix+"i:*", func(key string) error {
		ids = append(ids, strings.TrimPrefix(key, s.prefix+"i:"))
		return nil
	}); err != nil {
		return nil, err
	}
	nums, err := s.DocNums(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]IDNum, 0, len(ids))
	for i, id := range ids {
		if nums[i] != 0 { // NB: deleted since the scan saw it
			out = append(out, IDNum{id, nums[i]})
		}
	}
	slices.SortFunc(out, func(a, b IDNum) int { return cmp.Compare(a.Num, b.Num) })
	// NB: SCAN may return a key twice (a master that rehashes while the
	// scan runs): each id once.
	out = slices.CompactFunc(out, func(a, b IDNum) bool { return a == b })
	// NB: and each number once: two ids name one only when Redis lost
	// writes (the counters' among them) and gave the number out again,
	// the first id's key kept on a node that did not lose it. Both listed,
	// a scan gave the record twice and pairs paired it with itself. The
	// id the record is of is kept (the other is Check's to report and
	// Repair's to remove), or the first when it is of neither.
	var twice []uint64
	for i := 1; i < len(out); i++ {
		if out[i].Num == out[i-1].Num && (len(twice) == 0 || twice[len(twice)-1] != out[i].Num) {
			twice = append(twice, out[i].Num)
		}
	}
	if len(twice) == 0 {
		return out, nil
	}
	owners := make([]*redis.StringCmd, len(twice))
	if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range twice {
			owners[i] = p.HGet(ctx, s.docKey(n), "i")
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	owner := make(map[uint64]string, len(twice))
	for i, n := range twice {
		owner[n] = owners[i].Val()
	}
	kept := out[:0]
	for i := 0; i < len(out); {
		j := i + 1
		for j < len(out) && out[j].Num == out[i].Num {
			j++
		}
		keep := out[i]
		for _, x := range out[i:j] {
			if x.ID == owner[x.Num] {
				keep = x
			}
		}
		kept = append(kept, keep)
		i = j
	}
	return kept, nil
}

// UsedMemory returns the memory the masters report in use (INFO memory's
// used_memory, summed): what the index costs, with the servers' own
// overhead and whatever else they hold. Replicas hold as much again.
func (s *Store) UsedMemory(ctx context.Context) (uint64, error) {
	var mu sync.Mutex
	var total uint64
	each := func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "memory").Result()
		if err != nil {
			return err
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return fmt.Errorf("rediskv: INFO memory: used_memory %q", v)
				}
				mu.Lock()
				total += n
				mu.Unlock()
			}
		}
		return nil
	}
	// NB: the call before total is read: Go leaves the order of a plain
	// operand and a call in one return statement unspecified.
	err := s.eachMaster(ctx, each)
	return total, err
}

// slotOf returns the cluster slot of key: CRC16 (XMODEM) of the key, or
// of its hash tag (the text between the first { and the next }, when not
// empty), modulo 16384, as the Redis Cluster specification defines it.
func slotOf(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) & 16383
}

// resyncRecheck is how long Sync takes a master for one that
// acknowledges alone (no replica connected, or its replicas being synced
// anew) before it asks again.
const resyncRecheck = time.Second

// cutOff is a master's entry in Store.cutOff.
type cutOff struct {
	until time.Time
	err   error // the failed write's
}

// slowReplicaWaits is how many of Sync's timeouts it waits in all for a
// replica that is connected and in sync but does not acknowledge (a
// replica stalled by its own fork, or stopped) before it fails.
const slowReplicaWaits = 5

// ErrNotReplicated is returned by Sync when a master's replicas did not
// acknowledge its writes in time.
var ErrNotReplicated = errors.New("rediskv: the writes were not acknowledged by a replica in time")

// Sync waits until every master that has a replica has had all it held
// when Sync began acknowledged by at least one replica: the writes
// acknowledged before it then survive the failover of a master. (Redis
// replicates asynchronously: without it, a master that fails right after
// a write may take the write with it.)
//
// NB: WAIT counts the writes of its own connection, and a master's
// replication stream is ordered: Sync writes one key that the master
// owns and waits for it on the same connection, which covers every
// earlier write to that master, whichever connection made it.
func (s *Store) Sync(ctx context.Context, timeout time.Duration) error {
	ms := max(1, timeout.Milliseconds())
	// replication reads a master's replication: alone (no replica
	// connected), or syncing (its replicas all being synced anew: a
	// replica restarted or rejoined, state wait_bgsave or send_bulk).
	replication := func(ctx context.Context, c *redis.Client) (alone, syncing bool, err error) {
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return false, false, err
		}
		alone = strings.Contains(info, "connected_slaves:0")
		return alone, !alone && !strings.Contains(info, "state=online"), nil
	}
	unreplicated := func(addr string) {
		if s.Unreplicated != nil {
			s.Unreplicated(addr)
		}
	}
	// skipWait notes that addr acknowledges alone: it is not waited on
	// until resyncRecheck passes.
	skipWait := func(addr string) { s.noWait.Store(addr, time.Now().Add(resyncRecheck)) }
	// acksAlone is Sync's end for a master that acknowledges alone: noted
	// (skipWait), and said (Unreplicated).
	acksAlone := func(addr string) error {
		skipWait(addr)
		unreplicated(addr)
		return nil
	}
	// NB: listed says that the cluster lists a replica of the master
	// (CLUSTER SHARDS): then INFO's connected_slaves:0 does not make it
	// alone. A replica whose link is down (a partition, a replica
	// stopped or restarting) is still one the cluster promotes if the
	// master fails, with the writes the master acknowledged alone lost:
	// 18 and 48 acknowledged writes in a review's two runs.
	waitOn := func(ctx context.Context, c *redis.Client, key string, replicas string) error {
		addr := c.Options().Addr
		listed := replicas != ""
		linked := false // at the last INFO: a replica connected, in sync
		replication := func(ctx context.Context, c *redis.Client) (alone, syncing bool, err error) {
			alone, syncing, err = replication(ctx, c)
			linked = err == nil && !alone && !syncing
			return alone && !listed, syncing, err
		}
		waited := timeout
		cutOffErr := func() error {
			who := "its replica"
			if replicas != "" {
				who += " (" + replicas + ")"
			}
			if linked {
				return fmt.Errorf("%w: %s, within %v: %s is connected but did not acknowledge the write: it is stalled (a fork for an AOF rewrite or an RDB save, a slow disk, a stopped process?), and a failover now would promote it without the write (write again once it keeps up; or write with NoSync: db.WriteOptions, the API's no_sync)", ErrNotReplicated, addr, waited, who)
			}
			return fmt.Errorf("%w: %s, within %v: %s is not connected, and a failover now would promote it without the write (bring it back; or remove it from the cluster, CLUSTER FORGET on every node; or write with NoSync: db.WriteOptions, the API's no_sync)", ErrNotReplicated, addr, waited, who)
		}
		if v, ok := s.cutOff.Load(addr); ok && listed {
			if co := v.(cutOff); time.Now().Before(co.until) {
				// NB: the failed write's words: this one's said "not
				// connected ... within 200ms" of a replica stalled, having
				// waited nothing (a read-through's R2).
				return fmt.Errorf("%w (of a write to it less than %v before; this one was not waited for)", co.err, resyncRecheck)
			}
			s.cutOff.Delete(addr)
		}
		// NB: a master alone or whose replicas were being synced anew is
		// asked again (INFO, one round trip) at most every resyncRecheck,
		// not waited on: every write of a sync that lasts minutes waited
		// 2 s, and every write to a server with no replica did.
		if until, ok := s.noWait.Load(addr); ok {
			if time.Now().Before(until.(time.Time)) {
				unreplicated(addr)
				return nil
			}
			single, syncing, err := replication(ctx, c)
			if err != nil {
				return err
			}
			if single || syncing {
				return acksAlone(addr)
			}
			s.noWait.Delete(addr)
		}
		// acked writes to key and waits up to timeout for a replica to
		// hold it (WAIT counts a connection's last write: both in one
		// pipeline, one connection).
		// NB: the write is a script, flagged allow-oom where the servers
		// take the flag (script; a plain INCR is refused at maxmemory): a delete
		// there, carried out, was reported failed as "disk full" by its
		// wait for the replicas (an operator's review of Redis, RD2-6).
		acked := func() (bool, error) {
			var n *redis.Cmd
			if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Eval(ctx, s.script(incrScript), []string{key})
				n = p.Do(ctx, "WAIT", 1, ms)
				return nil
			}); err != nil {
				return false, err
			}
			got, err := n.Int64()
			return err == nil && got >= 1, nil
		}
		// NB: a master with no replica (one that lost it to a failover)
		// has nothing to wait for; checked only when WAIT comes back
		// short, to keep the common case at one round trip. Nor has one
		// whose replicas are all being synced anew, which acknowledge
		// nothing until the sync ends: every synced write failed for as
		// long as it took. Such a master's writes are as unreplicated as
		// those of a master alone, and said so (Unreplicated).
		//
		// NB: a replica connected and in sync that is only slow (its own
		// fork for an AOF rewrite or an RDB save stalls it on a busy
		// machine) is waited on again, up to slowReplicaWaits timeouts
		// in all, while it stays connected: every write to its master
		// failed after the first timeout, said "not connected" (an
		// operator's review of Redis, RD2). One that begins a sync anew
		// meanwhile makes the master one that acknowledges alone, as
		// before the wait (a read-through's R7).
		for round := 1; ; round++ {
			if ok, err := acked(); ok || err != nil {
				return err
			}
			single, syncing, err := replication(ctx, c)
			switch {
			case err != nil && strings.HasPrefix(err.Error(), "NOPERM"):
				// NB: the write failed with INFO's NOPERM, which named no
				// cause; every write of a user without INFO to a server
				// with no replica did, 2 s each.
				return fmt.Errorf("%w: %s, within %v, and this user may not run INFO, which tells a server with no replica (grant it +info, or write with NoSync where no replica is wanted): %w", ErrNotReplicated, addr, waited, err)
			case err != nil:
				return err
			case single || syncing:
				return acksAlone(addr)
			}
			if !linked || round == slowReplicaWaits {
				break
			}
			waited += timeout
		}
		if listed {
			// NB: the next writes fail at once for resyncRecheck,
			// instead of each waiting the whole timeout.
			err := cutOffErr()
			s.cutOff.Store(addr, cutOff{until: time.Now().Add(resyncRecheck), err: err})
			return err
		}
		if linked {
			return cutOffErr()
		}
		return fmt.Errorf("%w: %s, within %v", ErrNotReplicated, addr, timeout)
	}
	cc, ok := s.c.(*redis.ClusterClient)
	if !ok {
		// NB: a server of its own is most often one with no replica (a
		// development setup, a cache): its WAIT waited the whole timeout
		// before the check after it found the server alone, 2 s the first
		// synced write of each process. It is asked once before it is
		// first waited on; concurrent first Syncs wait for that answer.
		// A user whose ACL refuses INFO (@dangerous) may still WAIT: such
		// an error is no answer, and WAIT decides as before.
		c := s.c.(*redis.Client)
		s.asked.Do(func() {
			if alone, syncing, err := replication(ctx, c); err == nil && (alone || syncing) {
				skipWait(c.Options().Addr)
			}
		})
		return waitOn(ctx, c, s.prefix+"sync", "")
	}
	shards, err := cc.ClusterShards(ctx).Result()
	if err != nil {
		return err
	}
	// Each master's largest slot range, if the cluster lists a replica of
	// it (whatever its health).
	// NB: a master that lost its replica (it was the replica, promoted
	// when its master failed) has none to wait for: WAIT would block for
	// the whole timeout on every write, which made a 100,000-document
	// load through a failover take 87 s instead of about 6.
	type rng struct{ start, end int }
	owns := map[string]rng{}
	named := map[string]string{} // master → its replicas, for messages
	var alone []string
	for _, sh := range shards {
		master, replicas := "", 0
		var names []string
		for _, n := range sh.Nodes {
			switch {
			case n.Role == "master":
				master = net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))
			default:
				names = append(names, net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))+" "+n.Health)
				// NB: every replica the shard lists, whatever its health
				// ("online"; "loading", Redis 7.0's word for one whose
				// offset its master has not yet heard of; "fail"): one
				// failed, or cut off, but back when its master fails is
				// promoted with what it had. (A replica promoted by a
				// failover is in a shard of its own: its old master,
				// failed, is listed apart until it is back, as a replica.)
				replicas++
			}
		}
		if master != "" && replicas > 0 && len(sh.Slots) > 0 {
			// NB: its largest range: a reshard leaves single slots in
			// the masters' lists, the one being moved among them, whose
			// every key got MOVED (a write applied, reported failed).
			var r rng
			for _, sl := range sh.Slots {
				if sl.End-sl.Start >= int64(r.end-r.start) {
					r = rng{int(sl.Start), int(sl.End)}
				}
			}
			owns[master] = r
			named[master] = strings.Join(names, ", ")
		}
		if master != "" && replicas == 0 && len(sh.Slots) > 0 {
			alone = append(alone, master)
		}
	}
	for _, m := range alone {
		unreplicated(m)
	}
	// NB: each master with a replica is reached as go-redis reaches the
	// owner of a key in its slots (MasterForKey), not by matching its
	// address in CLUSTER SHARDS with go-redis's name for it: a cluster
	// known by a host name (or announcing host names) matched none, and
	// every Sync returned at once, the writes acknowledged unreplicated.
	errs := make(chan error, len(owns))
	for master, r := range owns {
		go func() {
			// NB: a key of a slot being migrated gets ASK (or, just
			// after a failover, MOVED) from the node go-redis still
			// takes for its owner: its write stood, and the next slot's
			// key is tried (a migration moves one slot at a time).
			var err error
			for i, tried := 0, 0; tried < 8; i++ {
				key := s.prefix + "sync:" + strconv.Itoa(i)
				// NB: an index name holds no hash tag (Open refuses { and
				// }): its keys spread over every slot.
				if sl := slotOf(key); sl < r.start || sl > r.end {
					continue
				}
				tried++
				var c *redis.Client
				if c, err = cc.MasterForKey(ctx, key); err != nil {
					break
				}
				if err = waitOn(ctx, c, key, cmp.Or(named[master], "listed")); !redirected(err) {
					break
				}
				// NB: go-redis reloads the slot map in the background:
				// tried again at once, every key went to the old owner.
				cc.ReloadState(ctx)
				select {
				case <-ctx.Done():
				case <-time.After(time.Duration(tried) * 50 * time.Millisecond):
				}
			}
			if redirected(err) {
				err = fmt.Errorf("%w: the slots of %s were moving to other nodes (a reshard, a failover) through every try: the write was applied; that it was replicated is not known (%w)", ErrNotReplicated, master, err)
			} else if err != nil {
				err = fmt.Errorf("waiting for the replicas of %s: %w", master, err)
			}
			errs <- err
		}()
	}
	// NB: one error, the first; the others' masters are named after it
	// (errors.Join's line breaks came out as "\n" in a message line).
	var first error
	var others []string
	for range owns {
		if err := <-errs; err != nil {
			if first == nil {
				first = err
			} else {
				others = append(others, err.Error())
			}
		}
	}
	if first != nil && len(others) > 0 {
		return fmt.Errorf("%w; and %s", first, strings.Join(others, "; "))
	}
	return first
}

// redirected reports whether err is a cluster's redirection (ASK or
// MOVED) of a command sent to one node.
func redirected(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.HasPrefix(msg, "ASK ") || strings.HasPrefix(msg, "MOVED ")
}

// expiryMillis is the Unix millisecond at or after the Unix nanosecond
// ns: a key expires no earlier than its document.
func expiryMillis(ns int64) int64 { return (ns + 999_999) / 1_000_000 }

func expiryTime(ns int64) time.Time { return time.UnixMilli(expiryMillis(ns)) }

// expiryMember is the expiry set's member for doc n with buckets: the
// number and the buckets, which the sweep needs after the record is gone.
func expiryMember(n uint64, buckets []uint64) string {
	b := make([]byte, 0, 20+17*len(buckets))
	b = strconv.AppendUint(b, n, 10)
	for _, k := range buckets {
		b = append(b, ':')
		b = strconv.AppendUint(b, k, 16)
	}
	return string(b)
}

func parseExpiryMember(m string) (n uint64, buckets []uint64, err error) {
	parts := strings.Split(m, ":")
	if n, err = strconv.ParseUint(parts[0], 10, 64); err != nil {
		return 0, nil, fmt.Errorf("rediskv: expiry member %q", m)
	}
	for _, p := range parts[1:] {
		k, err := strconv.ParseUint(p, 16, 64)
		if err != nil {
			return 0, nil, fmt.Errorf("rediskv: expiry member %q", m)
		}
		buckets = append(buckets, k)
	}
	return n, buckets, nil
}

// Sweep removes up to batch documents at a time that expired at now (Unix
// nanoseconds) from the index until none is due: their postings, what
// Redis has not yet expired of their records, their expiry entries, and
// their count. Concurrent sweeps (several processes) may each remove a
// document's postings and record (which is idempotent), and count it
// once: only the one whose claim took the entry does. A batch once begun
// is finished, whatever becomes of ctx (which is checked between
// batches), within sweepBatchTimeout.
//
// NB: removing, claiming and counting are three round trips (their keys
// are on several nodes). A sweep whose ctx ended between them (the
// background sweep of a handle being closed: every short command's) left
// the postings and the count of documents whose expiry entries were gone:
// no later sweep or purge removed them, Count went on counting them and
// Check failed until a Repair. A process killed between the claim and the
// count still leaves the count too high, for Repair.
func (s *Store) Sweep(ctx context.Context, now int64, batch int) (int, error) {
	return s.SweepCounted(ctx, now, batch, nil)
}

// SweepCounted is Sweep, telling swept (if not nil) how many documents
// each batch removed as it commits: a sweep of a build's documents, which
// expire together, runs for minutes, and its count is its progress.
func (s *Store) SweepCounted(ctx context.Context, now int64, batch int, swept func(int)) (int, error) {
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		due, err := s.c.ZRangeByScore(ctx, s.expiryKey(), &redis.ZRangeBy{
			Min: "-inf", Max: strconv.FormatInt(now/1_000_000, 10), Count: int64(batch),
		}).Result()
		if err != nil || len(due) == 0 {
			return total, err
		}
		mine, err := s.sweepBatch(ctx, due)
		total += mine
		if swept != nil && mine > 0 {
			swept(mine)
		}
		if err != nil || len(due) < batch {
			return total, err
		}
	}
}

// sweepBatchTimeout bounds a sweep's batch once claimed (Sweep).
const sweepBatchTimeout = 30 * time.Second

// sweepBatch removes the documents of the expiry entries due, claims
// the entries, and counts those it claimed; it returns how many. It runs
// to its end whatever becomes of ctx (see Sweep).
func (s *Store) sweepBatch(ctx context.Context, due []string) (int, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sweepBatchTimeout)
	defer cancel()
	// NB: the documents' postings and records are removed first, then
	// their entries claimed, then counted: removing is idempotent (a
	// batch that fails part way is done again by the next sweep), and an
	// entry claimed whose count fails is put back for the next. Claimed
	// first, a batch that failed after its claims (a failover of the
	// counters' master, a node of the postings down) lost for good the
	// count and the postings on the failed node: a review's index counted
	// 100 documents too many, and 393 postings named none.
	var members []string
	var badMember error
	if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, m := range due {
			n, buckets, err := parseExpiryMember(m)
			if err != nil {
				badMember = cmp.Or(badMember, err) // NB: Check's to report
				continue
			}
			members = append(members, m)
			num := strconv.FormatUint(n, 10)
			for band, b := range buckets {
				p.SRem(ctx, s.postKey(band, b), num)
			}
			p.Del(ctx, s.docKey(n))
		}
		return nil
	}); err != nil {
		return 0, err
	}
	token := rand.Text()
	claims := make([]*redis.Cmd, len(members))
	if _, err := s.scripted(ctx, func(p redis.Pipeliner, eval evaluator) error {
		for i, m := range members {
			claims[i] = s.claim(p, eval, token, m)
		}
		return nil
	}); err != nil {
		return 0, err
	}
	var mine []redis.Z
	for i, c := range claims {
		if n, _ := c.Int(); n == 1 { // NB: else another sweep took it
			mine = append(mine, redis.Z{Score: 0, Member: members[i]})
		}
	}
	if len(mine) == 0 {
		return 0, badMember
	}
	if err := s.addLive(ctx, -int64(len(mine)), token).Err(); err != nil {
		// NB: tried again with the same token first (countScript counts
		// a token once, and keeps it longer than this takes): a count
		// that ran but whose answer was lost, put back, was counted
		// again by the next sweep. Only a count that cannot be made is
		// put back, due at once (score 0), for the next sweep, which
		// finds nothing left to remove and counts the entries; in a
		// context of its own, as the batch's may be what ended.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sweepBatchTimeout)
		defer cancel()
		for try := 1; try <= 3 && err != nil; try++ {
			select {
			case <-rctx.Done():
			case <-time.After(time.Duration(try) * 200 * time.Millisecond):
			}
			err = s.addLive(rctx, -int64(len(mine)), token).Err()
		}
		if err == nil {
			s.c.Del(rctx, s.claimsKey(token))
			s.Finished(&Attempt{token: token})
			return len(mine), badMember
		}
		if e := s.c.ZAdd(rctx, s.expiryKey(), mine...).Err(); e != nil {
			return 0, fmt.Errorf("%w (and %d expired documents left uncounted, which lshdb check --repair counts: %w)", err, len(mine), e)
		}
		return 0, err
	}
	s.c.Del(ctx, s.claimsKey(token))
	// NB: its count's mark goes with the next write's count
	// (countedMemory is a write's, longer than a sweep needs).
	s.Finished(&Attempt{token: token})
	return len(mine), badMember
}

// Pending returns how many documents have expired at now (Unix
// nanoseconds) and await the sweep, and how many more are set to expire.
func (s *Store) Pending(ctx context.Context, now int64) (expired, expiring int64, err error) {
	cut := strconv.FormatInt(now/1_000_000, 10)
	var a, b *redis.IntCmd
	if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		a = p.ZCount(ctx, s.expiryKey(), "-inf", cut)
		b = p.ZCount(ctx, s.expiryKey(), "("+cut, "+inf")
		return nil
	}); err != nil {
		return 0, 0, err
	}
	return a.Val(), b.Val(), nil
}

// ListSizes calls fn with the band, bucket and size of every posting list
// (of band, or of every band when band < 0), a SCAN page per pipeline.
func (s *Store) ListSizes(ctx context.Context, band int, fn func(band int, bucket uint64, size int)) error {
	pattern := s.postingPattern()
	if band >= 0 {
		pattern = s.prefix + "p:" + strconv.Itoa(band) + ":*"
	}
	return s.scanPages(ctx, pattern, func(c *redis.Client, keys []string) error {
		cmds, err := cmdsOf(ctx, c, keys, func(p redis.Pipeliner, k string) *redis.IntCmd { return p.SCard(ctx, k) })
		if err != nil {
			return err
		}
		for i, k := range keys {
			b, bucket, ok := strings.Cut(strings.TrimPrefix(k, s.prefix+"p:"), ":")
			bn, err1 := strconv.Atoi(b)
			bk, err2 := strconv.ParseUint(bucket, 16, 64)
			if !ok || err1 != nil || err2 != nil {
				return fmt.Errorf("rediskv: a posting list key %q", k)
			}
			if n := cmds[i].Val(); n > 0 {
				fn(bn, bk, int(n))
			}
		}
		return nil
	})
}

// MemoryUsage returns the memory the index's keys take on the masters,
// by record kind as db's Stats names them ("docs", "ids", "postings",
// "manifest+counters", the expiry set counted with the last): MEMORY
// USAGE of every key (keys, values and Redis's per-key overhead, not the
// servers' own), a SCAN page per pipeline. Replicas hold as much again.
func (s *Store) MemoryUsage(ctx context.Context) (map[string]uint64, error) {
	out := map[string]uint64{"docs": 0, "ids": 0, "postings": 0, "expiry": 0, "manifest+counters": 0}
	kind := func(key string) string {
		switch rest := strings.TrimPrefix(key, s.prefix); {
		case strings.HasPrefix(rest, "d:"):
			return "docs"
		case strings.HasPrefix(rest, "i:"):
			return "ids"
		case strings.HasPrefix(rest, "p:"):
			return "postings"
		case rest == "x":
			return "expiry"
		}
		return "manifest+counters"
	}
	usage := func(c redis.Cmdable, keys []string) error {
		// NB: SAMPLES 0 sizes every element of a set or hash (the
		// default samples 5 and extrapolates).
		cmds, err := cmdsOf(ctx, c, keys, func(p redis.Pipeliner, k string) *redis.IntCmd { return p.MemoryUsage(ctx, k, 0) })
		if err != nil {
			return err
		}
		for i, k := range keys {
			n, err := cmds[i].Result()
			switch {
			case errors.Is(err, redis.Nil):
				// NB: a key deleted since the scan saw it.
			case err != nil:
				return fmt.Errorf("rediskv: MEMORY USAGE %s: %w", k, err)
			default:
				out[kind(k)] += uint64(n)
			}
		}
		return nil
	}
	if err := s.scanPages(ctx, s.prefix+"*", func(c *redis.Client, keys []string) error { return usage(c, keys) }); err != nil {
		return nil, err
	}
	if err := usage(s.c, []string{s.countersKey()}); err != nil {
		return nil, err
	}
	return out, nil
}

// Drop deletes every key of the index (Flush): its manifest first, so
// that a reader that opens it meanwhile finds no index rather than part of
// one.
func (s *Store) Drop(ctx context.Context) error {
	_, err := s.Flush(ctx)
	return err
}
