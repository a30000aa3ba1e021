// Every test process checks machine folds against xstate, deciders used without an app included.
import { checkFolds } from '../../src/core/machine-decider.js';

checkFolds(process.env.KEEL_CHECK_FOLDS === '1');
