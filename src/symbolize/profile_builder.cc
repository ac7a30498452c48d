#include "symbolize/profile_builder.h"
