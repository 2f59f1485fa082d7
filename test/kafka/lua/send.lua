-- lua-resty-kafka (Debian's lua-nginx-kafka 0.07, module nginx.kafka.*)
-- in an nginx content handler, run by test/kafka/lua_resty.sh: the
-- partitions a Metadata v0 answer gives, three synchronous sends at the
-- producer's defaults or at ?v=API_VERSION (Produce v0 with message format
-- v0 by default; v2 sends format v1 with timestamps), ?acks=N for
-- required_acks, and one asynchronous send its timer flushes.  One line
-- per step: "meta N", "send KEY OFFSET_AFTER ERR", "async OK ERR".
local client = require "nginx.kafka.client"
local producer = require "nginx.kafka.producer"

local brokers = { { host = "127.0.0.1", port = tonumber(ngx.var.arg_port) } }
local topic = ngx.var.arg_topic
local config = {}
if ngx.var.arg_v then config.api_version = tonumber(ngx.var.arg_v) end
if ngx.var.arg_acks then config.required_acks = tonumber(ngx.var.arg_acks) end
local tag = ngx.var.arg_v or "default"

local _, partitions = client:new(brokers):fetch_metadata(topic)
ngx.say("meta ", type(partitions) == "table" and partitions.num or tostring(partitions))

local p = producer:new(brokers, config)
for i = 1, 3 do
	local key = tag .. "-k" .. i
	local offset, err = p:send(topic, key, tag .. "-v" .. i)
	ngx.say("send ", key, " ", tostring(offset):gsub("LL$", ""), " ", tostring(err))
end

config.producer_type = "async"
config.flush_time = 100
local ok, err = producer:new(brokers, config):send(topic, tag .. "-async", tag .. "-a")
ngx.say("async ", tostring(ok), " ", tostring(err))
