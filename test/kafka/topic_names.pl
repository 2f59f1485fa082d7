# Kafka's topic name rule is written twice: in SQL (mq._topic_name_valid,
# which Metadata and topic creation ask) and in C
# (broker/mq-kafka/topic_name.c, for DescribeConfigs and the alters, which
# refuse a name before any statement).  For each name given in hex this
# prints "HEX CODE", DescribeConfigs v0's error for a topic of that name:
# INVALID_TOPIC_EXCEPTION (17) where the C rule refuses it, or
# UNKNOWN_TOPIC_OR_PARTITION (3) for a legal name no topic has;
# test/kafka/topic_names.sh compares them with the SQL rule.
#   topic_names.pl PORT HEX...
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use KafkaWire qw(kafka_connect kafka_request str);

my ($port, @hex) = @ARGV;
die "usage: topic_names.pl PORT HEX...\n" unless @hex;
my $sock = kafka_connect($port);
for my $h (@hex) {
	my $name = pack('H*', $h);
	my $r = kafka_request($sock, 'topic_names.pl', 32, 0, pack('l> c', 1, 2) . str($name) . pack('l>', -1), 0, 30);
	die "DescribeConfigs of $h: no answer\n" unless defined $r;
	# correlation id, throttle time, results: 1, the first one's error code
	print "$h ", unpack('x4 x4 x4 s>', $r), "\n";
}
