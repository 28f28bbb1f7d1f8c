"""Prometheus text as prometheus_client parses it: label values unescaped, junk and unread lines left out."""

from __future__ import annotations

from runner.metrics import READ, kv_capacity_tokens, parse_prometheus, queue_length


def test_escaped_label_values_are_unescaped() -> None:
    # A model path with a backslash, a quote and a newline, escaped as the exposition format says.
    text = ('vllm:num_requests_waiting{model_name="C:\\\\models\\\\tiny \\"q\\"\\nv2",engine="0"} 2\n'
            'vllm:cache_config_info{block_size="16",num_gpu_blocks="1024",engine="a\\"b"} 1\n'
            'vllm:cache_config_info{block_size="16",num_gpu_blocks="1024",engine="a\\\\\\"b"} 1\n')
    samples = parse_prometheus(text)
    assert samples[0].labels == {"model_name": 'C:\\models\\tiny "q"\nv2', "engine": "0"}
    assert queue_length(samples) == 2
    # Two engines whose names differ only in escaping: two caches, not one.
    assert [s.labels["engine"] for s in samples[1:]] == ['a"b', 'a\\"b']
    assert kv_capacity_tokens(samples) == 2 * 16 * 1024


def test_a_line_that_does_not_parse_is_left_out_and_the_rest_kept() -> None:
    text = ("# HELP vllm:num_requests_running x\n# TYPE vllm:num_requests_running gauge\n"
            'vllm:num_requests_running{engine="0"} 3\n'
            'vllm:num_requests_waiting{engine="0"} not-a-number\n'
            'vllm:num_requests_waiting{engine="1"} 1\n'
            "garbage line\n")
    assert [(s.name, s.labels["engine"], s.value) for s in parse_prometheus(text)] == [
        ("vllm:num_requests_running", "0", 3.0), ("vllm:num_requests_waiting", "1", 1.0)]


def test_only_the_samples_the_runner_reads_unless_asked_for_all() -> None:
    text = "python_gc_objects_collected_total 12\nvllm:time_to_first_token_seconds_count 4\n"
    assert [s.name for s in parse_prometheus(text)] == ["vllm:time_to_first_token_seconds_count"]
    assert len(parse_prometheus(text, None)) == 2
    assert "vllm:inter_token_latency_seconds_bucket" in READ and "sglang:num_queue_reqs" in READ
