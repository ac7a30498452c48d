#pragma once
// The metrics model as an OTLP/HTTP metrics request (ExportMetricsServiceRequest, protobuf):
// counters as cumulative monotonic sums, histograms as cumulative explicit-bucket histograms,
// under one resource (the agent's host, service.name "uscope") and the scope "uscope".
#include <string>

#include "model/metrics.h"

namespace uscope {

inline constexpr const char* kOtlpProtobufType = "application/x-protobuf";

// Resource attributes, e.g. {"host.name", "node-1"}.
std::string otlp_metrics_request(const MetricsSnapshot& snapshot, const MetricAttributes& resource,
                                 const std::string& uscope_version);

}  // namespace uscope
