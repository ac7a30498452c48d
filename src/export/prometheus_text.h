#pragma once
// Renders the metrics model as Prometheus' text exposition format (version 0.0.4), through
// prometheus-cpp's serializer. Names follow OpenTelemetry's Prometheus compatibility rules:
// http.server.request.duration (unit s) becomes http_server_request_duration_seconds, a counter
// gets _total, attribute http.request.method the label http_request_method.
#include <string>

#include "model/metrics.h"

namespace uscope {

inline constexpr const char* kPrometheusTextType = "text/plain; version=0.0.4; charset=utf-8";

// The Prometheus name of an OpenTelemetry metric.
std::string prometheus_name(const Metric& m);
// A valid Prometheus label name for an attribute.
std::string prometheus_label(const std::string& attribute);

std::string prometheus_text(const MetricsSnapshot& snapshot);

}  // namespace uscope
