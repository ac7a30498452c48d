#include "discover/socket_table.h"

#include <gtest/gtest.h>

namespace uscope {
namespace {

TEST(socket_table, parses_ipv4_rows) {
  auto rows = parse_tcp_table(
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
      "timeout inode\n"
      "   0: 0100007F:5F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        "
      "0 12345 1 0000000000000000 100 0 0 10 0\n"
      "   1: 0100007F:A2C4 0100007F:5F90 01 00000000:00000000 00:00000000 00000000     0        "
      "0 67890 1 0000000000000000 20 4 30 10 -1\n"
      "   2: garbage\n",
      false);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].local, "127.0.0.1:24464");
  EXPECT_EQ(rows[0].remote, "0.0.0.0:0");
  EXPECT_EQ(rows[1].inode, 67890u);
  EXPECT_EQ(rows[1].remote, "127.0.0.1:24464");
}

TEST(socket_table, parses_ipv6_rows_and_shows_mapped_ipv4_as_ipv4) {
  auto rows = parse_tcp_table(
      "  sl  local_address                         remote_address                        st "
      "tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 00000000000000000000000001000000:1F90 00000000000000000000000001000000:D431 01 "
      "00000000:00000000 00:00000000 00000000     0        0 111 1 0000000000000000 20 4 0 10 "
      "-1\n"
      "   1: 0000000000000000FFFF00000100007F:1F90 0000000000000000FFFF00000100007F:D432 01 "
      "00000000:00000000 00:00000000 00000000     0        0 222 1 0000000000000000 20 4 0 10 "
      "-1\n",
      true);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].local, "[::1]:8080");
  EXPECT_EQ(rows[0].remote, "[::1]:54321");
  EXPECT_EQ(rows[1].remote, "127.0.0.1:54322");
}

}  // namespace
}  // namespace uscope
