// sarama (Debian's golang-github-shopify-sarama-dev 1.22.1) against
// mq-kafka with its default settings (issue 23).  Built offline by
// test/kafka/sarama.sh (GO111MODULE=off GOPATH=/usr/share/gocode).
//
//	sarama_defaults BROKER TOPIC GROUP
//
// Two parts, printed as one JSON object (the records first):
//   - "defaults": sarama.NewConfig() untouched (config.Version 0.8.2):
//     Metadata v0 for the topics and partitions, and the offset manager
//     (FindCoordinator v0, OffsetFetch v1, OffsetCommit v1) committing an
//     offset that a second offset manager then reads back.
//   - "group": the lowest config.Version whose Produce and Fetch use
//     record batches (0.11.0; older versions need the v0/v1 message
//     formats mq-kafka does not serve), everything else at its default,
//     so the group commits with OffsetCommit v1 (default
//     Consumer.Offsets.Retention): a producer sends 10 records, a group
//     member reads 4 and leaves (committing), a second member resumes.
//
// A step that fails is reported as "error: ..." in its place; the JSON
// so far is printed after each step, sarama's log goes to stderr.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"log"

	"github.com/Shopify/sarama"
)

var broker, topic, group string

func errs(err error) string { return "error: " + err.Error() }

// the default configuration's client: metadata, then a commit and a resume
func defaults() map[string]interface{} {
	out := map[string]interface{}{}
	cfg := sarama.NewConfig()
	out["version"] = cfg.Version.String()
	client, err := sarama.NewClient([]string{broker}, cfg)
	if err != nil {
		out["client"] = errs(err)
		return out
	}
	defer client.Close()
	topics, err := client.Topics()
	if err != nil {
		out["topics"] = errs(err)
		return out
	}
	found := false
	for _, t := range topics {
		found = found || t == topic
	}
	out["topic_listed"] = found
	parts, err := client.Partitions(topic)
	if err != nil {
		out["partitions"] = errs(err)
		return out
	}
	out["partitions"] = parts
	out["committed_before"] = managed(client, 5)
	out["committed_after"] = managed(client, -1)
	return out
}

// an offset manager of GROUP-plain on partition 0: the offset it finds,
// and it commits mark (if >= 0) when closed
func managed(client sarama.Client, mark int64) interface{} {
	om, err := sarama.NewOffsetManagerFromClient(group+"-plain", client)
	if err != nil {
		return errs(err)
	}
	pom, err := om.ManagePartition(topic, 0)
	if err != nil {
		om.Close()
		return errs(err)
	}
	next, _ := pom.NextOffset()
	if mark >= 0 {
		pom.MarkOffset(mark, "sarama")
	}
	pom.Close()
	if err := om.Close(); err != nil {
		return errs(err)
	}
	return next
}

type member struct {
	want   int
	got    []string
	cancel context.CancelFunc
}

func (m *member) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (m *member) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (m *member) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for msg := range c.Messages() {
		if len(m.got) == m.want {
			break
		}
		m.got = append(m.got, string(msg.Value))
		s.MarkMessage(msg, "")
		if len(m.got) == m.want {
			m.cancel()
		}
	}
	return nil
}

func groupConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V0_11_0_0
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Producer.Return.Successes = true
	return cfg
}

// one member of GROUP until it read n records, then it leaves
func consume(n int) interface{} {
	g, err := sarama.NewConsumerGroup([]string{broker}, group, groupConfig())
	if err != nil {
		return errs(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m := &member{want: n, cancel: cancel}
	for ctx.Err() == nil {
		if err := g.Consume(ctx, []string{topic}, m); err != nil {
			g.Close()
			return errs(err)
		}
	}
	if err := g.Close(); err != nil {
		return errs(err)
	}
	return m.got
}

func produce() interface{} {
	p, err := sarama.NewSyncProducer([]string{broker}, groupConfig())
	if err != nil {
		return errs(err)
	}
	defer p.Close()
	var offs []int64
	for i := 0; i < 10; i++ {
		_, off, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0,
			Value: sarama.StringEncoder(fmt.Sprintf("v%d", i))})
		if err != nil {
			return errs(err)
		}
		offs = append(offs, off)
	}
	return offs
}

// the JSON so far, after each step (the last line is the whole)
func main() {
	broker, topic, group = os.Args[1], os.Args[2], os.Args[3]
	sarama.Logger = log.New(os.Stderr, "[sarama] ", log.Lmicroseconds)
	out := map[string]interface{}{}
	enc := json.NewEncoder(os.Stdout)
	grp := map[string]interface{}{}
	out["group"] = grp
	grp["produced"] = produce()
	enc.Encode(out)
	out["defaults"] = defaults() // after the records: mq refuses commits beyond the high watermark
	enc.Encode(out)
	grp["first"] = consume(4)
	enc.Encode(out)
	grp["second"] = consume(6)
	enc.Encode(out)
}
