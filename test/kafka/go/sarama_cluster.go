// sarama (Debian's golang-github-shopify-sarama-dev 1.22.1) against
// mq-kafka on the three-node cluster, with its default settings (issue
// 23).  Built offline by test/t/140_kafka_cluster_clients.pl and
// 141_kafka_cluster_clients_failover.pl (GO111MODULE=off
// GOPATH=/usr/share/gocode).  BOOT is one daemon's address: sarama learns
// the others from Metadata.  Lines are printed (and flushed) as events
// happen, so the test can act while it runs; sarama's log goes to stderr.
//
//	sarama_cluster defaults BOOT TOPIC GROUP
//	    sarama.NewConfig() untouched (config.Version 0.8.2): Metadata v0
//	    names the topic's partitions and their leaders ("leader P ID"),
//	    then an offset manager of GROUP (FindCoordinator v0, OffsetFetch
//	    v1, OffsetCommit v1) commits offset P+1 on each partition P and a
//	    second one reads them back ("offset P BEFORE AFTER")
//	sarama_cluster produce BOOT TOPIC N [acks]
//	    an async producer with the default configuration (Produce v0,
//	    message format v0; acks=1 and 3 retries unless acks is given: 1,
//	    -1 or all) sends keyed records "v0".."vN-1" (hash partitioner):
//	    "ack VALUE PARTITION OFFSET" or "fail VALUE ERROR", then
//	    "done ACKED FAILED"; PACE_MS (default 20) after every 50 records
//	sarama_cluster consume BOOT TOPIC GROUP MAX IDLE_S
//	    one member of GROUP at the lowest version sarama allows groups at
//	    (0.10.2), defaults otherwise (OffsetCommit v1), from the oldest
//	    offset, until it has MAX records or none came for IDLE_S seconds;
//	    it marks each record and commits when it leaves: "session
//	    GENERATION" per group session (a rebalance starts another, from
//	    the committed offsets), "rec PARTITION OFFSET VALUE" per record,
//	    then "done COUNT"
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/Shopify/sarama"
)

var outMu sync.Mutex

// produce: the pause after every 50 records (PACE_MS, default 20)
var pace = 20 * time.Millisecond

func init() {
	if ms, err := strconv.Atoi(os.Getenv("PACE_MS")); err == nil {
		pace = time.Duration(ms) * time.Millisecond
	}
}

func say(format string, args ...interface{}) {
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Fprintf(os.Stdout, format+"\n", args...)
	os.Stdout.Sync()
}

func die(what string, err error) {
	say("error %s: %v", what, err)
	os.Exit(1)
}

func defaults(boot, topic, group string) {
	cfg := sarama.NewConfig()
	say("version %s", cfg.Version)
	client, err := sarama.NewClient([]string{boot}, cfg)
	if err != nil {
		die("client", err)
	}
	defer client.Close()
	parts, err := client.Partitions(topic)
	if err != nil {
		die("partitions", err)
	}
	for _, p := range parts {
		b, err := client.Leader(topic, p)
		if err != nil {
			die("leader", err)
		}
		say("leader %d %d", p, b.ID())
	}
	before := managed(client, group, topic, parts, true)
	after := managed(client, group, topic, parts, false)
	for i, p := range parts {
		say("offset %d %d %d", p, before[i], after[i])
	}
}

// an offset manager of group on every partition: the offsets it finds;
// with mark, it commits P+1 on partition P when closed
func managed(client sarama.Client, group, topic string, parts []int32, mark bool) []int64 {
	om, err := sarama.NewOffsetManagerFromClient(group, client)
	if err != nil {
		die("offset manager", err)
	}
	var found []int64
	var poms []sarama.PartitionOffsetManager
	for _, p := range parts {
		pom, err := om.ManagePartition(topic, p)
		if err != nil {
			die("manage partition", err)
		}
		next, _ := pom.NextOffset()
		found = append(found, next)
		if mark {
			pom.MarkOffset(int64(p)+1, "sarama")
		}
		poms = append(poms, pom)
	}
	// each Close waits for the next commit tick (1 s): all at once
	var wg sync.WaitGroup
	for _, pom := range poms {
		wg.Add(1)
		go func(pom sarama.PartitionOffsetManager) { defer wg.Done(); pom.Close() }(pom)
	}
	wg.Wait()
	if err := om.Close(); err != nil {
		die("offset manager close", err)
	}
	return found
}

func produce(boot, topic string, n int, acks string) {
	cfg := sarama.NewConfig()
	cfg.Producer.Return.Successes = true
	switch acks {
	case "":
	case "all", "-1":
		cfg.Producer.RequiredAcks = sarama.WaitForAll
	case "1":
		cfg.Producer.RequiredAcks = sarama.WaitForLocal
	default:
		die("acks", fmt.Errorf("unknown acks %q", acks))
	}
	p, err := sarama.NewAsyncProducer([]string{boot}, cfg)
	if err != nil {
		die("producer", err)
	}
	var acked, failed int
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for m := range p.Successes() {
			acked++
			say("ack %s %d %d", m.Metadata, m.Partition, m.Offset)
		}
	}()
	go func() {
		defer wg.Done()
		for e := range p.Errors() {
			failed++
			say("fail %s %v", e.Msg.Metadata, e.Err)
		}
	}()
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("v%d", i)
		p.Input() <- &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)),
			Value: sarama.StringEncoder(v), Metadata: v}
		if i%50 == 49 {
			time.Sleep(pace) // a steady stream, not one burst
		}
	}
	p.AsyncClose()
	wg.Wait()
	say("done %d %d", acked, failed)
}

type member struct {
	want, got int
	last      time.Time
	mu        sync.Mutex
	cancel    context.CancelFunc
}

func (m *member) Setup(s sarama.ConsumerGroupSession) error {
	say("session %d", s.GenerationID())
	return nil
}
func (m *member) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (m *member) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for msg := range c.Messages() {
		m.mu.Lock()
		if m.got == m.want {
			m.mu.Unlock()
			break
		}
		m.got++
		m.last = time.Now()
		say("rec %d %d %s", msg.Partition, msg.Offset, msg.Value)
		s.MarkMessage(msg, "")
		if m.got == m.want {
			m.cancel()
		}
		m.mu.Unlock()
	}
	return nil
}

func consume(boot, topic, group string, most int, idle time.Duration) {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V0_10_2_0
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	g, err := sarama.NewConsumerGroup([]string{boot}, group, cfg)
	if err != nil {
		die("group", err)
	}
	go func() {
		for err := range g.Errors() {
			say("group-error %v", err)
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{want: most, cancel: cancel, last: time.Now()}
	go func() { // stop once nothing came for idle
		for ctx.Err() == nil {
			time.Sleep(200 * time.Millisecond)
			m.mu.Lock()
			quiet := time.Since(m.last) > idle
			m.mu.Unlock()
			if quiet {
				cancel()
			}
		}
	}()
	for ctx.Err() == nil {
		if err := g.Consume(ctx, []string{topic}, m); err != nil {
			say("consume-error %v", err)
			time.Sleep(time.Second)
		}
	}
	if err := g.Close(); err != nil {
		die("group close", err)
	}
	say("done %d", m.got)
}

func main() {
	sarama.Logger = log.New(os.Stderr, "[sarama] ", log.Lmicroseconds)
	a := os.Args[1:]
	switch a[0] {
	case "defaults":
		defaults(a[1], a[2], a[3])
	case "produce":
		n, _ := strconv.Atoi(a[3])
		acks := ""
		if len(a) > 4 {
			acks = a[4]
		}
		produce(a[1], a[2], n, acks)
	case "consume":
		most, _ := strconv.Atoi(a[4])
		idle, _ := strconv.Atoi(a[5])
		consume(a[1], a[2], a[3], most, time.Duration(idle)*time.Second)
	default:
		die("command", fmt.Errorf("unknown %q", a[0]))
	}
}
