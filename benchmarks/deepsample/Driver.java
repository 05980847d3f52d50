import java.io.OutputStream;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;

import selector.classification.DeepESTSelector;
import selector.classification.GBSSelector;
import selector.classification.PartitionInfo;
import selector.classification.RHCSSelector;
import selector.classification.SUPSSelector;
import selector.classification.StratifiedRandomSelectorWOR;
import selector.classification.TwoUPSSelector;
import utility.InitializerTF;
import utility.TestCase;
import utility.TestFrame;
import utility.TestSuiteFileLoader;

/**
 * labelwise's thin driver for DeepSample's classification selectors (benchmarks/deepsample_peer.py).
 *
 * <p>Loads one pile the way DeepSample's own mains do (Classification_main_jar: TestSuiteFileLoader,
 * 10 partitions by Weka's SimpleKMeans on the auxiliary column; DeepEST_classification and
 * SUPS_classification: InitializerTF), then runs each selector {@code reps} times at each size in
 * one JVM. Prints one line per run on stdout: {@code method size rep accuracy variance}, the
 * variance being the selector's own variance estimate of its estimate, or NaN where the selector
 * computes none. DeepSample's own progress messages go to stderr.
 *
 * <p>Usage: {@code Driver CSV N KEY SIZES REPS METHODS [DEEPEST_CONF_THRESHOLD [DEEPEST_D]]}, with
 * SIZES and METHODS comma-separated; methods among SSRS, 2-UPS, GBS, RHC-S, SUPS, DeepEST.
 */
public class Driver {
	static final int PARTITIONS = 10; // Classification_main_jar's NPartitionsSimulation

	public static void main(String[] args) throws Exception {
		String csv = args[0];
		int size = Integer.parseInt(args[1]);
		int key = Integer.parseInt(args[2]);
		int[] sizes = Arrays.stream(args[3].split(",")).mapToInt(Integer::parseInt).toArray();
		int reps = Integer.parseInt(args[4]);
		String[] methods = args[5].split(",");
		// DeepEST_classification: "confidence 0.7" in run_DeepEST.sh, turned into 1 - 0.7 on
		// the auxiliary 1 - confidence; d = 0.8 as in its call to selectAndRunTestCase
		double confThreshold = args.length > 6 ? Double.parseDouble(args[6]) : 0.7;
		double d = args.length > 7 ? Double.parseDouble(args[7]) : 0.8;

		PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false);
		System.setOut(System.err);

		TestSuiteFileLoader tsfl = new TestSuiteFileLoader();
		tsfl.loadTestSuiteSimulation_class(csv, key, size);
		ArrayList<PartitionInfo> structure = tsfl.getPartitionsSimulation_kNN(PARTITIONS, key, csv);
		ArrayList<ArrayList<TestCase>> partitions = new ArrayList<ArrayList<TestCase>>();
		ArrayList<TestCase> complete = new ArrayList<TestCase>();
		StringBuilder sizesLine = new StringBuilder("# partitions");
		for (PartitionInfo p : structure) {
			partitions.add(p.getListOfTests());
			complete.addAll(p.getListOfTests());
			sizesLine.append(' ').append(p.getListOfTests().size());
		}
		out.println(sizesLine);

		ArrayList<TestFrame> frames = new InitializerTF(csv).readTestFrames(key, size);
		double threshold = 1 - confThreshold;
		// weightedMatrixComputation_threshold's N x N matrix has N equal rows (entry j is the
		// auxiliary of row j when above the threshold, else 0); ActiveSet only reads it, so one
		// row shared by all N saves N^2 doubles without changing a weight
		double[] row = new double[frames.size()];
		for (int j = 0; j < frames.size(); j++) {
			double aux = frames.get(j).getFailureProb();
			row[j] = aux > threshold ? aux : 0;
		}
		double[][] weights = new double[frames.size()][];
		Arrays.fill(weights, row);

		for (String m : methods) {
			for (int n : sizes) {
				for (int r = 0; r < reps; r++) {
					double acc;
					double var = Double.NaN;
					switch (m) {
						case "SSRS": {
							StratifiedRandomSelectorWOR s = new StratifiedRandomSelectorWOR(complete, partitions, PARTITIONS, 0, n, 0);
							s.selectAndRunTestCase();
							acc = s.REstimate;
							break;
						}
						case "2-UPS": {
							TwoUPSSelector s = new TwoUPSSelector(complete, partitions, PARTITIONS, 0, n);
							s.selectAndRunTestCase();
							acc = s.REstimate;
							break;
						}
						case "GBS": {
							GBSSelector s = new GBSSelector(complete, partitions, PARTITIONS, 0, n);
							s.selectAndRunTestCase();
							acc = s.REstimate;
							break;
						}
						case "RHC-S": {
							RHCSSelector s = new RHCSSelector(new ArrayList<TestCase>(complete), n, n);
							s.selectAndRunTestCase(95);
							acc = s.estimate;
							var = s.varianceEstimate;
							break;
						}
						case "SUPS": {
							double[] ret = new SUPSSelector().weigthedOperationalTesting(frames, n);
							acc = ret[0];
							break;
						}
						case "DeepEST": {
							double[] ret = new DeepESTSelector().selectAndRunTestCase(n, frames, weights, d);
							acc = 1 - ret[0];
							var = ret[1];
							break;
						}
						default:
							throw new IllegalArgumentException("unknown method " + m);
					}
					out.println(m + " " + n + " " + r + " " + acc + " " + var);
				}
			}
		}
		out.flush();
	}
}
