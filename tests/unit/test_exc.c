/* The double-fault combination rules (hv/arch/x86/exc.h) against SDM
 * Vol. 3 Table 6-5, every pair of vectors 0-31. */
#include "unit.h"
#include "arch/x86/exc.h"

static int table_6_5(int first, int second)
{
	enum { BENIGN, CONTRIB, PF } c1, c2;
	c1 = (first == 0 || (first >= 10 && first <= 13)) ? CONTRIB : first == 14 ? PF : BENIGN;
	c2 = (second == 0 || (second >= 10 && second <= 13)) ? CONTRIB : second == 14 ? PF : BENIGN;
	if (first == 8)
		return c2 == BENIGN ? second : EXC_TRIPLE;
	if (c1 == CONTRIB && c2 == CONTRIB)
		return 8;
	if (c1 == PF && c2 != BENIGN)
		return 8;
	return second;
}

int main(void)
{
	for (int a = 0; a < 32; a++)
		for (int b = 0; b < 32; b++)
			CHECK(exc_combine(a, b) == table_6_5(a, b), "first %d second %d: %d", a, b, exc_combine(a, b));
	/* the cases the SDM names */
	CHECK(exc_combine(13, 11) == 8, "#GP then #NP");
	CHECK(exc_combine(14, 14) == 8, "#PF then #PF");
	CHECK(exc_combine(14, 13) == 8, "#PF then #GP");
	CHECK(exc_combine(13, 14) == 14, "#GP then #PF: serially");
	CHECK(exc_combine(8, 13) == EXC_TRIPLE, "#DF then #GP: shutdown");
	CHECK(exc_combine(6, 11) == 11, "#UD then #NP: serially");
	return unit_done("test_exc");
}
