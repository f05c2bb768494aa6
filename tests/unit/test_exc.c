/* The double-fault rules (SDM Vol. 3 Table 6-5) as base/exc.c applies
 * them to an exception raised while another was being delivered. */
#include "unit.h"
#include "base/vcpu.h"

int main(void)
{
	static const u8 benign[] = { 1, 2, 3, 4, 5, 6, 7, 9, 16, 17, 18, 19 };
	static const u8 contrib[] = { 0, 10, 11, 12, 13 };
	for (unsigned i = 0; i < sizeof(benign); i++) {
		for (unsigned j = 0; j < sizeof(contrib); j++) {
			CHECK(exc_combine(benign[i], contrib[j]) == EXC_DELIVER_SECOND, "benign %u then %u",
			      benign[i], contrib[j]);
			CHECK(exc_combine(contrib[j], benign[i]) == EXC_DELIVER_SECOND, "%u then benign %u",
			      contrib[j], benign[i]);
			CHECK(exc_combine(8, benign[i]) == EXC_DELIVER_SECOND, "#DF then benign %u", benign[i]);
		}
		CHECK(exc_combine(benign[i], 14) == EXC_DELIVER_SECOND, "benign %u then #PF", benign[i]);
		CHECK(exc_combine(14, benign[i]) == EXC_DELIVER_SECOND, "#PF then benign %u", benign[i]);
	}
	for (unsigned i = 0; i < sizeof(contrib); i++) {
		for (unsigned j = 0; j < sizeof(contrib); j++)
			CHECK(exc_combine(contrib[i], contrib[j]) == EXC_DOUBLE_FAULT, "%u then %u",
			      contrib[i], contrib[j]);
		CHECK(exc_combine(contrib[i], 14) == EXC_DELIVER_SECOND, "contributory %u then #PF",
		      contrib[i]);
		CHECK(exc_combine(14, contrib[i]) == EXC_DOUBLE_FAULT, "#PF then %u", contrib[i]);
		CHECK(exc_combine(8, contrib[i]) == EXC_TRIPLE_FAULT, "#DF then %u", contrib[i]);
	}
	CHECK(exc_combine(14, 14) == EXC_DOUBLE_FAULT, "#PF then #PF");
	CHECK(exc_combine(8, 14) == EXC_TRIPLE_FAULT, "#DF then #PF");
	return unit_done("test_exc");
}
