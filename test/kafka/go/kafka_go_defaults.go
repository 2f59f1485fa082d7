// segmentio/kafka-go (Debian's golang-github-segmentio-kafka-go-dev 0.2.1)
// at its defaults against mq-kafka (test/kafka/kafka_go.sh): the Conn API
// creates a topic (CreateTopics v0) and lists its partitions (Metadata
// v1), a Writer sends ten keyed records (Produce v2, message format v1),
// a Reader in a consumer group reads them (JoinGroup v1, SyncGroup v0,
// Fetch v2, OffsetCommit v2, committing after each message), and a leader
// connection reads the offsets (ListOffsets v1) and a batch.  Prints one
// JSON line of what it saw.  (A second member of the group would wait out
// the first one's 30 s session: kafka-go's Close sends no LeaveGroup while
// its fetch, held for its 1 MB min_bytes, is in flight.)
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: kafka_go_defaults BROKER TOPIC GROUP")
		os.Exit(2)
	}
	broker, topic, group := os.Args[1], os.Args[2], os.Args[3]
	out := map[string]interface{}{}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	fail := func(what string, err error) {
		out["error"] = what + ": " + err.Error()
		j, _ := json.Marshal(out)
		fmt.Println(string(j))
		os.Exit(1)
	}

	conn, err := kafka.Dial("tcp", broker)
	if err != nil {
		fail("dial", err)
	}
	if err = conn.CreateTopics(kafka.TopicConfig{Topic: topic, NumPartitions: 2, ReplicationFactor: 1}); err != nil {
		fail("create topic", err)
	}
	parts, err := conn.ReadPartitions(topic)
	if err != nil {
		fail("read partitions", err)
	}
	out["partitions"] = len(parts)
	conn.Close()

	w := kafka.NewWriter(kafka.WriterConfig{Brokers: []string{broker}, Topic: topic})
	var msgs []kafka.Message
	for i := 0; i < 10; i++ {
		msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	if err = w.WriteMessages(ctx, msgs...); err != nil {
		fail("write", err)
	}
	w.Close()

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{broker}, GroupID: group, Topic: topic})
	var got []string
	for len(got) < 10 {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			fail("read", err)
		}
		got = append(got, fmt.Sprintf("%s=%s", m.Key, m.Value))
	}
	r.Close()
	sort.Strings(got)
	out["read"] = got

	lc, err := kafka.DialLeader(ctx, "tcp", broker, topic, 0)
	if err != nil {
		fail("dial leader", err)
	}
	first, last, err := lc.ReadOffsets()
	if err != nil {
		fail("read offsets", err)
	}
	out["offsets"] = fmt.Sprintf("%d %d", first, last)
	if _, err = lc.Seek(0, kafka.SeekAbsolute); err != nil {
		fail("seek", err)
	}
	b := lc.ReadBatch(1, 1e6)
	n := 0
	for {
		if _, err := b.ReadMessage(); err != nil {
			break
		}
		n++
	}
	b.Close()
	lc.Close()
	out["batch"] = n
	j, _ := json.Marshal(out)
	fmt.Println(string(j))
}
