// optiopay/kafka (Debian's golang-github-optiopay-kafka-dev 2.1.1) at its
// defaults against mq-kafka (test/kafka/optiopay.sh).  A Kafka client of
// its own (not librdkafka's, sarama's or kafka-go's encoders), which asks
// ApiVersions and takes the highest version both sides serve: Produce v2
// (message format v1), Fetch v5 (record batches), ListOffsets v2,
// Metadata v5.  A producer sends five keyed messages with acks=all, a
// consumer reads partition 0 from its oldest offset, and the broker
// answers the partition's oldest and newest offsets.  Prints one JSON line
// of what it saw.  Its offset coordinator is left out: it sends
// FindCoordinator v1 without the key type v1 requires, a request Kafka
// cannot parse and answers by closing the connection, as mq-kafka does.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/optiopay/kafka/v2"
	"github.com/optiopay/kafka/v2/proto"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: optiopay_defaults BROKER TOPIC")
		os.Exit(2)
	}
	addr, topic := os.Args[1], os.Args[2]
	out := map[string]interface{}{}
	fail := func(step string, err error) {
		out["error"] = fmt.Sprintf("%s: %v", step, err)
		b, _ := json.Marshal(out)
		fmt.Println(string(b))
		os.Exit(1)
	}

	broker, err := kafka.Dial([]string{addr}, kafka.NewBrokerConf("optiopay-test"))
	if err != nil {
		fail("dial", err)
	}
	defer broker.Close()

	producer := broker.Producer(kafka.NewProducerConf())
	var msgs []*proto.Message
	for i := 0; i < 5; i++ {
		msgs = append(msgs, &proto.Message{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	first, err := producer.Produce(topic, 0, msgs...)
	if err != nil {
		fail("produce", err)
	}
	out["produced_at"] = first

	consumer, err := broker.Consumer(kafka.NewConsumerConf(topic, 0))
	if err != nil {
		fail("consumer", err)
	}
	var read []string
	for len(read) < 5 {
		m, err := consumer.Consume()
		if err != nil {
			fail("consume", err)
		}
		read = append(read, fmt.Sprintf("%d:%s=%s", m.Offset, m.Key, m.Value))
	}
	out["read"] = read

	oldest, err := broker.OffsetEarliest(topic, 0)
	if err != nil {
		fail("earliest", err)
	}
	newest, err := broker.OffsetLatest(topic, 0)
	if err != nil {
		fail("latest", err)
	}
	out["offsets"] = []int64{oldest, newest}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}
