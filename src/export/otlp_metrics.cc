#include "export/otlp_metrics.h"

#include "otlp_metrics.pb.h"

namespace uscope {
namespace {

void put_attributes(const MetricAttributes& from,
                    google::protobuf::RepeatedPtrField<otlp::KeyValue>* to) {
  for (const auto& [k, v] : from) {
    otlp::KeyValue* kv = to->Add();
    kv->set_key(k);
    kv->mutable_value()->set_string_value(v);
  }
}

template <class Point>
void put_times(const MetricsSnapshot& s, Point* p) {
  p->set_start_time_unix_nano(s.start_unix_ns);
  p->set_time_unix_nano(s.time_unix_ns);
}

}  // namespace

std::string otlp_metrics_request(const MetricsSnapshot& snapshot, const MetricAttributes& resource,
                                 const std::string& uscope_version) {
  otlp::ExportMetricsServiceRequest req;
  otlp::ResourceMetrics* rm = req.add_resource_metrics();
  put_attributes(resource, rm->mutable_resource()->mutable_attributes());
  otlp::ScopeMetrics* sm = rm->add_scope_metrics();
  sm->mutable_scope()->set_name("uscope");
  sm->mutable_scope()->set_version(uscope_version);
  for (const Metric& m : snapshot.metrics) {
    otlp::Metric* out = sm->add_metrics();
    out->set_name(m.name);
    out->set_description(m.description);
    out->set_unit(m.unit);
    switch (m.kind) {
      case MetricKind::Counter: {
        otlp::Sum* sum = out->mutable_sum();
        sum->set_aggregation_temporality(otlp::AGGREGATION_TEMPORALITY_CUMULATIVE);
        sum->set_is_monotonic(true);
        for (const MetricPoint& p : m.points) {
          otlp::NumberDataPoint* d = sum->add_data_points();
          put_attributes(p.attributes, d->mutable_attributes());
          put_times(snapshot, d);
          d->set_as_double(p.value);
        }
        break;
      }
      case MetricKind::Gauge:
        for (const MetricPoint& p : m.points) {
          otlp::NumberDataPoint* d = out->mutable_gauge()->add_data_points();
          put_attributes(p.attributes, d->mutable_attributes());
          d->set_time_unix_nano(snapshot.time_unix_ns);
          d->set_as_double(p.value);
        }
        break;
      case MetricKind::Histogram: {
        otlp::Histogram* h = out->mutable_histogram();
        h->set_aggregation_temporality(otlp::AGGREGATION_TEMPORALITY_CUMULATIVE);
        for (const MetricPoint& p : m.points) {
          otlp::HistogramDataPoint* d = h->add_data_points();
          put_attributes(p.attributes, d->mutable_attributes());
          put_times(snapshot, d);
          d->set_count(p.count());
          d->set_sum(p.sum);
          for (uint64_t c : p.counts) d->add_bucket_counts(c);
          for (double b : p.bounds) d->add_explicit_bounds(b);
        }
        break;
      }
    }
  }
  return req.SerializeAsString();
}

}  // namespace uscope
